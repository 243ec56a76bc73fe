#pragma once
// Gradient norms and clipping without a host read: the norm stays a scalar on the gradients'
// device, so a GPU step is not made to wait for it (LibTorch's clip_grad_norm_ returns a double).
#include <torch/types.h>

#include <vector>

namespace unitrain {

/// The L2 norm of `grad` as a scalar on its device, float32 for a half or bfloat16 gradient
/// (whose own precision would round the sum of squares).
torch::Tensor norm_of_gradient(const torch::Tensor& grad);
/// The L2 norm of the norms `norms` (each a scalar): a global norm from its parts; a zero on the
/// CPU when there are none.
torch::Tensor norm_of_norms(const std::vector<torch::Tensor>& norms);
/// The global L2 norm of the gradients of `params` (those that have one): norm_of_norms of
/// their norm_of_gradient. No host read.
torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params);

/// Scales every gradient of `params` by min(1, max_norm / (norm + 1e-6)) and returns the norm
/// before scaling (gradient_norm()), with no host read: the coefficient is a device scalar, as
/// in torch.nn.utils.clip_grad_norm_ and LibTorch 2.x's clip_grad_norm_ (the same operations,
/// the same values), which then read the norm on the host to return it. As there, an infinite
/// norm scales by 0 (the infinite elements become NaN) and a NaN norm makes every gradient NaN.
torch::Tensor clip_gradient_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace unitrain
