#pragma once
// The optimizer's state in a checkpoint: per-parameter state tensors and each group's options.
#include <torch/optim/optimizer.h>

#include <functional>
#include <string>
#include <vector>

#include "unitrain/checkpoint/optimizer_merge.h"  // a ZeRO run's files: OptimizerFile, ...
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
/// (another type, other parameter groups). The state tensors are the records inside `bytes`
/// (which live as long as any of them), not copies.
void load_optimizer_state(torch::optim::Optimizer& optimizer, std::vector<char> bytes,
                          const std::string& what);

/// Bytes of the optimizer's per-parameter state tensors on this process (the moments of Adam,
/// ...), as its registered serializer names them; -1 for an optimizer without one.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

}  // namespace unitrain
