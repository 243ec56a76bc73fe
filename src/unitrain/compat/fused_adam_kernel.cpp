#include "unitrain/compat/fused_adam_kernel.h"

#include <torch/torch.h>
#include <torch/version.h>

#include "unitrain/core/error.h"

namespace unitrain {

#if TORCH_VERSION_MAJOR >= 2

namespace {

/// The kernel's launch, `lr` a double (fixed at the launch) or a tensor (read when it runs).
template <typename Lr>
void launch(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
            const std::vector<torch::Tensor>& exp_avgs,
            const std::vector<torch::Tensor>& exp_avg_sqs, const torch::Tensor& step, const Lr& lr,
            double beta1, double beta2, double weight_decay, double eps, bool decoupled) {
  // The kernel reads each parameter's step from its own list entry; they share one tensor.
  const std::vector<torch::Tensor> steps(params.size(), step);
  if (decoupled) {
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr,
                      beta1, beta2, weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false);
  } else {
    at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr, beta1,
                     beta2, weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false);
  }
}

}  // namespace

bool has_fused_adam_kernel() { return true; }

void fused_adam_kernel(const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& grads,
                       const std::vector<torch::Tensor>& exp_avgs,
                       const std::vector<torch::Tensor>& exp_avg_sqs, const torch::Tensor& step,
                       double lr, double beta1, double beta2, double weight_decay, double eps,
                       bool decoupled) {
  launch(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, weight_decay, eps,
         decoupled);
}

#endif

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)

bool has_fused_adam_tensor_lr() { return true; }

void fused_adam_kernel(const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& grads,
                       const std::vector<torch::Tensor>& exp_avgs,
                       const std::vector<torch::Tensor>& exp_avg_sqs, const torch::Tensor& step,
                       const torch::Tensor& lr, double beta1, double beta2, double weight_decay,
                       double eps, bool decoupled) {
  launch(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, weight_decay, eps,
         decoupled);
}

#else

bool has_fused_adam_tensor_lr() { return false; }

void fused_adam_kernel(const std::vector<torch::Tensor>&, const std::vector<torch::Tensor>&,
                       const std::vector<torch::Tensor>&, const std::vector<torch::Tensor>&,
                       const torch::Tensor&, const torch::Tensor&, double, double, double, double,
                       bool) {
  UT_CHECK(false, "LibTorch ", TORCH_VERSION,
           " has no fused Adam kernel that reads its learning rate from a tensor (2.4 has)");
}

#endif

#if TORCH_VERSION_MAJOR < 2

bool has_fused_adam_kernel() { return false; }

void fused_adam_kernel(const std::vector<torch::Tensor>&, const std::vector<torch::Tensor>&,
                       const std::vector<torch::Tensor>&, const std::vector<torch::Tensor>&,
                       const torch::Tensor&, double, double, double, double, double, bool) {
  UT_CHECK(false, "LibTorch ", TORCH_VERSION, " has no fused Adam kernel (2.x has)");
}

#endif

}  // namespace unitrain
