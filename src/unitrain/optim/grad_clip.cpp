#include "unitrain/optim/grad_clip.h"

#include <torch/torch.h>

namespace unitrain {

torch::Tensor norm_of_gradient(const torch::Tensor& grad) {
  torch::NoGradGuard no_grad;
  const auto type = grad.scalar_type();
  return type == torch::kHalf || type == torch::kBFloat16 ? grad.to(torch::kFloat).norm()
                                                          : grad.norm();
}

torch::Tensor norm_of_norms(const std::vector<torch::Tensor>& norms) {
  torch::NoGradGuard no_grad;
  if (norms.empty()) return torch::zeros({});
  return norms.size() == 1 ? norms[0] : torch::stack(norms).norm();
}

torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(norm_of_gradient(p.grad()));
  }
  return norm_of_norms(norms);
}

torch::Tensor clip_gradient_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  torch::Tensor norm = gradient_norm(params);
  const torch::Tensor coef = torch::clamp(max_norm / (norm + 1e-6), c10::nullopt, 1.0);
  for (const auto& p : params) {
    if (p.grad().defined()) p.grad().mul_(coef);
  }
  return norm;
}

}  // namespace unitrain
