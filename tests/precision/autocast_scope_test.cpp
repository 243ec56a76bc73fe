// AutocastScope: bfloat16 autocast on the CPU, nesting, and the float32 rule for the norms.
#include "unitrain/precision/autocast_scope.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace unitrain {
namespace {

TEST(AutocastScope, MatrixProductsRunInBfloat16InsideAndFloat32After) {
  torch::manual_seed(0);
  torch::nn::Linear fc(8, 4);
  const torch::Tensor x = torch::randn({3, 8});
  {
    AutocastScope scope(true, c10::DeviceType::CPU, torch::kBFloat16);
    EXPECT_EQ(fc->forward(x).scalar_type(), torch::kBFloat16);
    // Losses stay float32 (autocast's float32 list).
    EXPECT_EQ(torch::mse_loss(fc->forward(x), torch::zeros({3, 4})).scalar_type(), torch::kFloat32);
    {
      AutocastScope inner(true, c10::DeviceType::CPU, torch::kBFloat16);
      EXPECT_EQ(fc->forward(x).scalar_type(), torch::kBFloat16);
    }
    EXPECT_TRUE(at::autocast::is_cpu_enabled());  // the inner scope restored the outer's state
  }
  EXPECT_FALSE(at::autocast::is_cpu_enabled());
  EXPECT_EQ(fc->forward(x).scalar_type(), torch::kFloat32);
  AutocastScope off(false, c10::DeviceType::CPU, torch::kBFloat16);
  EXPECT_EQ(fc->forward(x).scalar_type(), torch::kFloat32);
}

TEST(AutocastScope, LayerNormAndGroupNormRunInFloat32OnBfloat16Inputs) {
  torch::manual_seed(1);
  torch::nn::Linear fc(8, 8);
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({8}));
  torch::nn::GroupNorm gn(2, 8);
  const torch::Tensor x = torch::randn({3, 8});
  torch::Tensor h, y, g;
  {
    AutocastScope scope(true, c10::DeviceType::CPU, torch::kBFloat16);
    h = fc->forward(x);  // bfloat16: LibTorch 1.13 alone fails on ln(h) ("expected BFloat16")
    y = ln->forward(h);
    g = gn->forward(h);
  }
  EXPECT_EQ(h.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(y.scalar_type(), torch::kFloat32);
  EXPECT_EQ(g.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(y, ln->forward(h.to(torch::kFloat32))));
  EXPECT_TRUE(torch::equal(g, gn->forward(h.to(torch::kFloat32))));
  // Gradients flow through the rule to every parameter.
  (y.sum() + g.sum()).backward();
  EXPECT_TRUE(fc->weight.grad().defined());
  EXPECT_TRUE(ln->weight.grad().defined());
  EXPECT_EQ(fc->weight.grad().scalar_type(), torch::kFloat32);
}

}  // namespace
}  // namespace unitrain
