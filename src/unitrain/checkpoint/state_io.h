#pragma once
// Serialising the stateful parts of a run: tensors (Python-readable), gradients, RNG;
// optimizer_state.h has the optimizer.
#include <torch/nn/module.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/named_tensors.h"

namespace unitrain {

/// A dict name -> tensor as a file in PyTorch's own format: `torch.load` in Python gives a
/// dict whose keys are the names. The image points at the tensors' memory (see torch_file.h).
FileImage tensor_dict_image(const NamedTensors& tensors);
/// tensor_dict_image's bytes.
std::vector<char> save_tensor_dict(const NamedTensors& tensors);
/// Reads save_tensor_dict's bytes or a dict of tensors saved by Python's `torch.save`
/// (a state_dict). The tensors are the records inside `bytes`, not copies (the bytes live as
/// long as any of them). TrainError naming `what` when the bytes are not such a dict.
NamedTensors load_tensor_dict(std::vector<char> bytes, const std::string& what);
/// load_tensor_dict of a mapped file: the tensors are read-only views of the mapping (which
/// they keep alive), read from disk only where they are touched. Copy before changing one.
NamedTensors map_tensor_dict(const MappedFile& file, const std::string& what);

/// Copies for snapshots, kept from one save to the next: copying into last time's buffers
/// spares a fresh allocation each save (for a large model, hundreds of MB of page faults and
/// zeroing while training waits). A buffer must not be copied into while a write still reads
/// it: wait for the previous save first. Not thread-safe.
///
/// With `defer`, copy() only reserves the buffer and queues the copy: take_copies() hands the
/// queue over as one function, which an async save runs on its writer thread while training
/// goes on — valid as long as training changes none of the sources before that function has
/// run (the Trainer waits for it before each optimizer step).
class SnapshotBuffers {
 public:
  explicit SnapshotBuffers(bool defer = false) : defer_(defer) {}
  /// `t` copied to the CPU (now, or queued with `defer`), into the buffer kept under `name`
  /// when its shape and type fit.
  torch::Tensor copy(const std::string& name, const torch::Tensor& t);
  /// copy() now whatever the mode: for tensors training changes before its next update (a
  /// forward pass updates batch-norm statistics).
  torch::Tensor copy_now(const std::string& name, const torch::Tensor& t);
  /// The queued copies, to run once (empty function when none are queued).
  std::function<void()> take_copies();

 private:
  torch::Tensor& buffer_for(const std::string& name, const torch::Tensor& t);
  bool defer_;
  std::unordered_map<std::string, torch::Tensor> buffers_;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> queued_;  ///< (buffer, source)
};

/// The module's parameters then buffers by their state_dict() names (`layers.0.weight`),
/// detached and on the CPU (a checkpoint holds CPU tensors, whatever the device). With `copy`,
/// copied (a snapshot that training will not change), into `buffers` when given (parameters
/// deferred when `buffers` defers, module buffers now); without, a CPU module's own tensors.
NamedTensors module_state(const torch::nn::Module& module, bool copy,
                          SnapshotBuffers* buffers = nullptr);
/// module_state of parameters and buffers given by name (float32 master weights in place of
/// a bfloat16 module's own).
NamedTensors named_state(const NamedTensors& params, const NamedTensors& buffers_of_module,
                         bool copy, SnapshotBuffers* buffers = nullptr);

/// Copies `state` into the module's parameters and buffers, matched by name. Strict: every
/// name must be present and no name extra. Either way a shape or dtype mismatch is an error.
/// ConfigError naming `what` and listing missing, unexpected and mismatched names (when strict
/// and only names differ, suggesting to set `strict_key` to false, unless it is empty).
/// Not strict, a state that holds none of the module's names is a ConfigError too (nothing
/// would be loaded). Returns a one-line summary of what was loaded (when not strict and some
/// names differ, which names loaded, which were left as they were and which were ignored).
std::string load_module_state(torch::nn::Module& module, const NamedTensors& state, bool strict,
                              const std::string& what,
                              const std::string& strict_key = "model.init_strict");

/// The gradients of the parameters that have one (for a checkpoint inside an accumulation
/// window), copied to the CPU.
NamedTensors gradient_state(const torch::nn::Module& module);
/// Sets the parameters' gradients from gradient_state (missing names: no gradient).
void load_gradient_state(torch::nn::Module& module, const NamedTensors& grads,
                         const std::string& what);

/// The state of every random generator the process uses (the CPU generator; CUDA's too when
/// present), as named tensors.
NamedTensors rng_state();
void load_rng_state(const NamedTensors& state, const std::string& what);

}  // namespace unitrain
