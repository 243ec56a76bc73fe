#pragma once
// LibTorch 2.x's fused multi-tensor Adam and AdamW kernels (at::_fused_adam_, at::_fused_adamw_:
// what PyTorch's `Adam(fused=True)` runs; CUDA in every 2.x, the CPU from 2.4). 1.x has none.
#include <torch/types.h>

#include <vector>

namespace unitrain {

/// Whether this LibTorch has the kernels.
bool has_fused_adam_kernel();

/// One Adam step (`decoupled`: AdamW's decay on the parameter; else weight decay added to the
/// gradient) of every tensor in `params`, in place with `exp_avgs` and `exp_avg_sqs`, in one
/// kernel launch per chunk of tensors. `step` is the step count after this step (a float32
/// scalar on the parameters' device, shared by all of them). All tensors on one device, each
/// parameter's gradient and moments of its dtype and shape. Only where has_fused_adam_kernel()
/// (elsewhere it throws).
void fused_adam_kernel(const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& grads,
                       const std::vector<torch::Tensor>& exp_avgs,
                       const std::vector<torch::Tensor>& exp_avg_sqs, const torch::Tensor& step,
                       double lr, double beta1, double beta2, double weight_decay, double eps,
                       bool decoupled);

/// Whether this LibTorch's kernels also take the learning rate as a tensor (2.4 and later).
bool has_fused_adam_tensor_lr();

/// fused_adam_kernel with the learning rate read from `lr` (a float32 scalar on the device)
/// when the kernel runs, not fixed when it is launched: what a CUDA graph replays. Only where
/// has_fused_adam_tensor_lr() (elsewhere it throws).
void fused_adam_kernel(const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& grads,
                       const std::vector<torch::Tensor>& exp_avgs,
                       const std::vector<torch::Tensor>& exp_avg_sqs, const torch::Tensor& step,
                       const torch::Tensor& lr, double beta1, double beta2, double weight_decay,
                       double eps, bool decoupled);

}  // namespace unitrain
