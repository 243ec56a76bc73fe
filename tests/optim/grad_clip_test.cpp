// Norms and clipping on the device: the values of LibTorch's clip_grad_norm_, no host read.
#include "unitrain/optim/grad_clip.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace unitrain {
namespace {

/// Three parameters with gradients of known size (and one without a gradient).
std::vector<torch::Tensor> parameters_with_gradients(double scale) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> params;
  for (int64_t n : {5, 7, 3}) {
    torch::Tensor p = torch::randn({n}).requires_grad_(true);
    p.mutable_grad() = torch::randn({n}) * scale;
    params.push_back(p);
  }
  params.push_back(torch::randn({2}).requires_grad_(true));  // no gradient
  return params;
}

TEST(GradClip, ScalesLikeLibTorchsClipGradNormAndReturnsTheNormBefore) {
  for (double scale : {0.01, 10.0}) {  // under the limit (untouched) and over it (scaled)
    auto mine = parameters_with_gradients(scale), theirs = parameters_with_gradients(scale);
    const torch::Tensor norm = clip_gradient_norm(mine, 1.0);
    const double expected = torch::nn::utils::clip_grad_norm_(theirs, 1.0);
    EXPECT_EQ(norm.dim(), 0);
    EXPECT_FLOAT_EQ(norm.item<float>(), static_cast<float>(expected));
    for (size_t i = 0; i < 3; ++i) {
      // (1.13's clip_grad_norm_ computes the coefficient in double, 2.x and PyTorch in float.)
      EXPECT_TRUE(torch::allclose(mine[i].grad(), theirs[i].grad(), 1e-6, 0)) << i;
    }
    EXPECT_FALSE(mine[3].grad().defined());
    const double clipped = gradient_norm(mine).item<double>();
    EXPECT_NEAR(clipped, std::min(expected, 1.0), 1e-5) << scale;
  }
}

TEST(GradClip, NonFiniteNormsScaleAsPyTorchsAndNoGradientsMeanZero) {
  // An infinite norm: a coefficient of 0 (the infinite element becomes NaN); a NaN norm: NaN.
  auto params = parameters_with_gradients(1.0);
  params[1].mutable_grad()[2] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(clip_gradient_norm(params, 1.0).item<double>()));
  EXPECT_TRUE(torch::equal(params[0].grad(), torch::zeros({5})));
  EXPECT_TRUE(std::isnan(params[1].grad()[2].item<double>()));
  params = parameters_with_gradients(1.0);
  params[0].mutable_grad()[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(clip_gradient_norm(params, 1.0).item<double>()));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(torch::isnan(params[i].grad()).all().item<bool>());
  const std::vector<torch::Tensor> none{torch::randn({3}).requires_grad_(true)};
  EXPECT_EQ(gradient_norm(none).item<double>(), 0.0);
  EXPECT_EQ(clip_gradient_norm(none, 1.0).item<double>(), 0.0);
}

}  // namespace
}  // namespace unitrain
