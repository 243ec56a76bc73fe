#include "unitrain/optim/grad_clip.h"

#include <torch/torch.h>

namespace unitrain {

torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(p.grad().norm());
  }
  if (norms.empty()) return torch::zeros({});
  return norms.size() == 1 ? norms[0] : torch::stack(norms).norm();
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
