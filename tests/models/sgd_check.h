#pragma once
// A few plain SGD steps on a model, for the "it learns" checks of the model tests.
#include <torch/torch.h>

#include <functional>
#include <utility>

namespace unitrain::test {

/// Runs `steps` SGD steps of `loss_fn()` over `module.parameters()`; returns the loss before
/// the first step and after the last one.
inline std::pair<double, double> sgd_losses(torch::nn::Module& module,
                                            const std::function<torch::Tensor()>& loss_fn,
                                            int steps, double lr) {
  torch::optim::SGD sgd(module.parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  double first = 0;
  for (int i = 0; i < steps; ++i) {
    sgd.zero_grad();
    auto loss = loss_fn();
    if (i == 0) first = loss.item<double>();
    loss.backward();
    sgd.step();
  }
  torch::NoGradGuard no_grad;
  return {first, loss_fn().item<double>()};
}

}  // namespace unitrain::test
