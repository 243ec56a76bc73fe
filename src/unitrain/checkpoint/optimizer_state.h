#pragma once
// The optimizer's state in a checkpoint: per-parameter state tensors and each group's options.
#include <torch/optim/optimizer.h>

#include <functional>
#include <string>
#include <vector>

#include "unitrain/checkpoint/state_io.h"

namespace unitrain {

/// The optimizer's state and each parameter group's options (lr, betas, weight decay, ...),
/// which LibTorch's own optimizer archive does not restore. For an optimizer with a registered
/// OptimizerStateSerializer (core/optimizer_state_serializer.h; the built-in sgd, adam, adamw,
/// adagrad and rmsprop register theirs in register_builtin_optimizers()) a dict in PyTorch's
/// format written straight from the state tensors:
///   {"format": 3, "type": "adam", "groups": [{"params": n, "options": {"lr": ..., ...}}],
///    "state": {"<i>": {"step": s, "exp_avg": ..., ...}}}   (i counts parameters over groups)
/// for other optimizers LibTorch's whole optimizer archive inside such a dict ("archive").
std::vector<char> save_optimizer_state(const torch::optim::Optimizer& optimizer);
/// save_optimizer_state in two halves: the snapshot now, the file when the returned function
/// runs. With `copy`, the state tensors are copied now (into `buffers` when given), so the
/// function may run on another thread while training goes on and changes them.
std::function<FileImage()> optimizer_state_snapshot(const torch::optim::Optimizer& optimizer,
                                                    bool copy, SnapshotBuffers* buffers = nullptr);
/// Restores save_optimizer_state; TrainError naming `what` when it does not fit the optimizer
/// (another type, other parameter groups).
void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::vector<char>& bytes,
                          const std::string& what);

/// Bytes of the optimizer's per-parameter state tensors on this process (the moments of Adam,
/// ...), as its registered serializer names them; -1 for an optimizer without one.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

/// One optimizer file's bytes and its name for messages.
struct OptimizerFile {
  std::vector<char> bytes;
  std::string what;
};
/// Restores the state of several files that together hold it (a ZeRO run's
/// optimizer-rank-<R>.pt, from any number of ranks: each holds its partition's parameter state
/// under the parameters' indices over the whole optimizer, and every group's options, which
/// are taken from the first). One file: load_optimizer_state. TrainError naming the file when
/// one is not such a file or the files disagree (optimizer type, groups).
void load_optimizer_state(torch::optim::Optimizer& optimizer,
                          const std::vector<OptimizerFile>& files);
/// The files load_optimizer_state(optimizer, files) reads, as one optimizer file (the same
/// format, every parameter's state in index order), without an optimizer: for `unitrain
/// checkpoint merge`. TrainError naming the file as there.
std::vector<char> merge_optimizer_files(const std::vector<OptimizerFile>& files);

}  // namespace unitrain
