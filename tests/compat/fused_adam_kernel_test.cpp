// LibTorch 2.x's fused Adam kernel, as fused_adam_kernel calls it (on the CPU, where 2.4+ has it
// too): three steps of Adam and AdamW equal LibTorch's own optimizers' to float rounding, and the
// moments are LibTorch's. 1.x has no kernel: the call is refused.
#include "unitrain/compat/fused_adam_kernel.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "test_util.h"
#include "unitrain/compat/optimizer_state_key.h"

namespace unitrain {
namespace {

template <typename Torch, typename Options, typename State>
void compare(bool decoupled) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> a = {torch::randn({5, 3}), torch::randn({7}), torch::randn({2, 2})};
  std::vector<torch::Tensor> b;
  for (auto& t : a) {
    t.requires_grad_();
    b.push_back(t.detach().clone());
  }
  Torch reference(a, Options(0.01).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1));
  std::vector<torch::Tensor> m, v;
  for (auto& t : b) {
    m.push_back(torch::zeros_like(t));
    v.push_back(torch::zeros_like(t));
  }
  for (int step = 1; step <= 3; ++step) {
    std::vector<torch::Tensor> grads;
    for (size_t i = 0; i < a.size(); ++i) grads.push_back(torch::randn(a[i].sizes()));
    for (size_t i = 0; i < a.size(); ++i) a[i].mutable_grad() = grads[i].clone();
    reference.step();
    fused_adam_kernel(b, grads, m, v, torch::full({}, double(step)), 0.01, 0.8, 0.95, 0.1, 1e-6,
                      decoupled);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i].detach(), b[i], 1e-5, 1e-6)) << i;
    const auto& s = static_cast<const State&>(*reference.state().at(optimizer_state_key(a[i])));
    EXPECT_EQ(s.step(), 3);
    EXPECT_TRUE(torch::allclose(s.exp_avg(), m[i], 1e-5, 1e-7)) << i;
    EXPECT_TRUE(torch::allclose(s.exp_avg_sq(), v[i], 1e-5, 1e-7)) << i;
  }
}

}  // namespace

TEST(FusedAdamKernel, StepsAsLibTorchsAdamAndAdamWWhereLibTorchHasIt) {
  EXPECT_EQ(has_fused_adam_kernel(), TORCH_VERSION_MAJOR >= 2);
  if (!has_fused_adam_kernel()) {
    std::vector<torch::Tensor> p = {torch::zeros({1})};
    const std::string m = test::message_of(
        [&] { fused_adam_kernel(p, p, p, p, torch::ones({}), 0.1, 0.9, 0.99, 0, 1e-8, true); });
    EXPECT_TRUE(test::contains(m, "has no fused Adam kernel")) << m;
    return;
  }
  using namespace torch::optim;
  compare<Adam, AdamOptions, AdamParamState>(/*decoupled=*/false);
  compare<AdamW, AdamWOptions, AdamWParamState>(/*decoupled=*/true);
}

}  // namespace unitrain
