// causal_attention on either LibTorch: the fused kernel (2.x) and the own product (1.x) both
// equal the textbook formula, attend only to the past, and train (gradients flow to q, k, v).
#include "unitrain/compat/attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace unitrain {
namespace {

torch::Tensor textbook(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t t = q.size(-2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  auto mask = torch::ones({t, t}, torch::kBool).triu(1);
  return torch::matmul(torch::softmax(scores.masked_fill(mask, -INFINITY), -1), v);
}

}  // namespace

TEST(Attention, EqualsTheFormulaAndAttendsOnlyToThePast) {
  torch::manual_seed(3);
  auto q = torch::randn({2, 3, 5, 8}, torch::requires_grad());
  auto k = torch::randn({2, 3, 5, 8}, torch::requires_grad());
  auto v = torch::randn({2, 3, 5, 8}, torch::requires_grad());
  torch::Tensor y = causal_attention(q, k, v, 0.0);
  EXPECT_TRUE(torch::allclose(y, textbook(q, k, v), 1e-5, 1e-6));
  // Position 0 sees only itself: its output is v's first row.
  EXPECT_TRUE(torch::allclose(y.select(2, 0), v.select(2, 0), 1e-5, 1e-6));
  // Changing the last position's key and value changes no earlier output.
  torch::Tensor k2 = k.detach().clone(), v2 = v.detach().clone();
  k2.select(2, 4).add_(1.0);
  v2.select(2, 4).add_(1.0);
  torch::Tensor y2 = causal_attention(q.detach(), k2, v2, 0.0);
  EXPECT_TRUE(torch::allclose(y2.slice(2, 0, 4), y.detach().slice(2, 0, 4), 1e-5, 1e-6));
  // Gradients equal the formula's.
  y.pow(2).sum().backward();
  auto qr = q.detach().clone().requires_grad_(), kr = k.detach().clone().requires_grad_(),
       vr = v.detach().clone().requires_grad_();
  textbook(qr, kr, vr).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(q.grad(), qr.grad(), 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(k.grad(), kr.grad(), 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(v.grad(), vr.grad(), 1e-4, 1e-5));
}

TEST(Attention, DropoutDropsWeightsAndKeepsTheExpectedValue) {
  torch::manual_seed(4);
  auto q = torch::zeros({1, 1, 4, 2}), k = torch::zeros({1, 1, 4, 2});
  auto v = torch::ones({1, 1, 4, 2});
  // Equal scores: each position averages the ones it sees, which dropout scales by 1/(1-p) or
  // drops; over many draws the mean stays 1.
  torch::Tensor sum = torch::zeros({1, 1, 4, 2});
  bool some_dropped = false;
  for (int i = 0; i < 400; ++i) {
    torch::Tensor y = causal_attention(q, k, v, 0.5);
    some_dropped = some_dropped || (y != 1).any().item<bool>();
    sum += y;
  }
  EXPECT_TRUE(some_dropped);
  EXPECT_TRUE(torch::allclose(sum / 400, torch::ones({1, 1, 4, 2}), 0.0, 0.2));
}

}  // namespace unitrain
