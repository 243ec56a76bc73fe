#pragma once
// Serialising the stateful parts of a run: tensors (Python-readable), optimizer, RNG.
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace unitrain {

/// Named tensors in a fixed order.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// Bytes of a dict name -> tensor in PyTorch's own pickle format: `torch.load` in Python gives
/// a dict whose keys are the names.
std::vector<char> save_tensor_dict(const NamedTensors& tensors);
/// Reads save_tensor_dict's bytes or a dict of tensors saved by Python's `torch.save`
/// (a state_dict). TrainError naming `what` when the bytes are not such a dict.
NamedTensors load_tensor_dict(const std::vector<char>& bytes, const std::string& what);

/// The module's parameters then buffers by their state_dict() names (`layers.0.weight`),
/// detached. With `copy`, on the CPU and cloned (a snapshot that training will not change).
NamedTensors module_state(const torch::nn::Module& module, bool copy);

/// Copies `state` into the module's parameters and buffers, matched by name. Strict: every
/// name must be present and no name extra. Either way a shape or dtype mismatch is an error.
/// ConfigError naming `what` and listing missing, unexpected and mismatched names.
/// Returns a one-line summary of what was loaded (and what was left as it was when not strict).
std::string load_module_state(torch::nn::Module& module, const NamedTensors& state, bool strict,
                              const std::string& what);

/// The optimizer's state and each parameter group's options (lr, betas, weight decay, ...):
/// LibTorch's own optimizer archive (which does not restore options) plus the options.
std::vector<char> save_optimizer_state(const torch::optim::Optimizer& optimizer);
/// save_optimizer_state in two halves: the snapshot now, the bytes when the returned function
/// runs. With `detach`, the optimizer's state tensors are first swapped for copies, so the
/// function may run on another thread while training goes on (what it serialises is no longer
/// changed by anyone). Optimizer states the swap does not know (other than sgd, adam, adamw,
/// adagrad and rmsprop's) are serialised at once instead.
std::function<std::vector<char>()> optimizer_state_snapshot(torch::optim::Optimizer& optimizer,
                                                            bool detach);
/// Restores save_optimizer_state; TrainError naming `what` when it does not fit the optimizer
/// (another type, other parameter groups).
void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::vector<char>& bytes,
                          const std::string& what);

/// The gradients of the parameters that have one (for a checkpoint inside an accumulation
/// window), copied.
NamedTensors gradient_state(const torch::nn::Module& module);
/// Sets the parameters' gradients from gradient_state (missing names: no gradient).
void load_gradient_state(torch::nn::Module& module, const NamedTensors& grads,
                         const std::string& what);

/// The state of every random generator the process uses (the CPU generator; CUDA's too when
/// present), as named tensors.
NamedTensors rng_state();
void load_rng_state(const NamedTensors& state, const std::string& what);

}  // namespace unitrain
