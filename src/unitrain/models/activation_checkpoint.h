#pragma once
// Activation checkpointing: run a piece of a model without keeping its activations for backward,
// and recompute them there (PyTorch's torch.utils.checkpoint, which LibTorch lacks).
#include <torch/types.h>

#include <functional>
#include <vector>

#include "unitrain/core/unit_runner.h"

namespace unitrain {

/// `fn(inputs)`, computed without recording its graph: only `inputs` are kept for backward, which
/// runs `fn` again with the graph on and backpropagates through that. Gradients reach `fn`'s
/// parameters (they accumulate into their .grad as usual) and the inputs that require them.
/// The recomputation sees what the first run saw: the generators' states (CPU, and the CUDA
/// device of the first CUDA input) are replayed, so dropout draws the same masks, and autocast's
/// state is restored; afterwards the generators go on where training left them. Results equal
/// those without checkpointing (bitwise on the CPU in float32).
/// Without grad mode `fn` just runs. Parameters get their gradients even when no input requires
/// one (the first block after a frozen embedding).
/// `fn` is kept until backward: what it captures must live that long (capture module holders by
/// value; they are shared pointers).
/// Requires: `fn` computes the same function each time it is called with the same generator
/// state (no state changed by the first run, e.g. a BatchNorm's running statistics are updated
/// twice); inputs are not changed in place between forward and backward.
std::vector<torch::Tensor> checkpointed(const TensorsFn& fn,
                                        const std::vector<torch::Tensor>& inputs);

/// One tensor in, one out: `x = checkpointed([&](const torch::Tensor& t) { return
/// block->forward(t); }, x);`
torch::Tensor checkpointed(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                           const torch::Tensor& input);

}  // namespace unitrain
