// FusedAdam / FusedAdamW against LibTorch's Adam / AdamW: the same trajectory to float rounding,
// the same bits whatever the thread count, LibTorch's own step where it cannot fuse.
#include "unitrain/optim/fused_adam.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "test_util.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/compat/fused_adam_kernel.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

// Parameters of awkward sizes (not multiples of any vector width) and a fixed loss.
std::vector<torch::Tensor> fused_test_params(torch::ScalarType dtype) {
  torch::manual_seed(4);
  std::vector<torch::Tensor> out;
  for (int64_t n : {1, 7, 33, 100003}) out.push_back(torch::randn({n}, dtype).requires_grad_());
  return out;
}

void fused_test_step(torch::optim::Optimizer& opt, std::vector<torch::Tensor>& params, int step) {
  opt.zero_grad();
  torch::Tensor loss = torch::zeros({}, params[0].options());
  for (auto& p : params) loss = loss + (p * p * (0.5 + 0.1 * step)).sum() + p.sin().sum();
  loss.backward();
  opt.step();
}

template <typename Fused, typename Torch, typename State, typename Options>
void expect_fused_follows_torch(const Options& options) {
  auto a = fused_test_params(torch::kFloat32);
  auto b = fused_test_params(torch::kFloat32);
  Fused fused(a, options);
  Torch plain(b, options);
  for (int step = 0; step < 30; ++step) {
    fused_test_step(fused, a, step);
    fused_test_step(plain, b, step);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6))
        << i << ": max difference " << (a[i] - b[i]).abs().max().template item<float>();
  }
  // The state is LibTorch's: the same step count and moments, to rounding.
  const auto& sa = static_cast<const State&>(*fused.state().at(optimizer_state_key(a[3])));
  const auto& sb = static_cast<const State&>(*plain.state().at(optimizer_state_key(b[3])));
  EXPECT_EQ(sa.step(), sb.step());
  // (Gradients are O(1) here and the parameters differ by rounding: absolute tolerance.)
  EXPECT_TRUE(torch::allclose(sa.exp_avg(), sb.exp_avg(), 1e-5, 1e-5))
      << (sa.exp_avg() - sb.exp_avg()).abs().max().template item<float>();
  EXPECT_TRUE(torch::allclose(sa.exp_avg_sq(), sb.exp_avg_sq(), 1e-5, 1e-5))
      << (sa.exp_avg_sq() - sb.exp_avg_sq()).abs().max().template item<float>();
}

TEST(FusedAdam, FollowsLibTorchsAdamAndAdamW) {
  using torch::optim::Adam;
  using torch::optim::AdamParamState;
  using torch::optim::AdamW;
  using torch::optim::AdamWParamState;
  expect_fused_follows_torch<FusedAdam, Adam, AdamParamState>(torch::optim::AdamOptions(1e-2));
  expect_fused_follows_torch<FusedAdam, Adam, AdamParamState>(
      torch::optim::AdamOptions(1e-2).weight_decay(0.1).betas({0.8, 0.99}).eps(1e-6));
  expect_fused_follows_torch<FusedAdamW, AdamW, AdamWParamState>(torch::optim::AdamWOptions(1e-2));
  expect_fused_follows_torch<FusedAdamW, AdamW, AdamWParamState>(
      torch::optim::AdamWOptions(3e-2).weight_decay(0.05));
}

TEST(FusedAdam, TheSameBitsWithOneOrTwoThreads) {
  const int threads = torch::get_num_threads();
  std::vector<std::vector<torch::Tensor>> results;
  for (int t : {1, 2}) {
    torch::set_num_threads(t);
    auto p = fused_test_params(torch::kFloat32);
    FusedAdamW opt(p, torch::optim::AdamWOptions(1e-2));
    for (int step = 0; step < 5; ++step) fused_test_step(opt, p, step);
    results.push_back(p);
  }
  torch::set_num_threads(threads);
  for (size_t i = 0; i < results[0].size(); ++i)
    EXPECT_TRUE(torch::equal(results[0][i], results[1][i])) << i;
}

TEST(FusedAdam, Float64AndAmsgradTakeLibTorchsStepExactly) {
  auto a = fused_test_params(torch::kFloat64);
  auto b = fused_test_params(torch::kFloat64);
  FusedAdam fused(a, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam plain(b, torch::optim::AdamOptions(1e-2));
  auto c = fused_test_params(torch::kFloat32);
  auto d = fused_test_params(torch::kFloat32);
  FusedAdam fused_ams(c, torch::optim::AdamOptions(1e-2).amsgrad(true));
  torch::optim::Adam plain_ams(d, torch::optim::AdamOptions(1e-2).amsgrad(true));
  for (int step = 0; step < 5; ++step) {
    fused_test_step(fused, a, step);
    fused_test_step(plain, b, step);
    fused_test_step(fused_ams, c, step);
    fused_test_step(plain_ams, d, step);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
    EXPECT_TRUE(torch::equal(c[i], d[i])) << i;
  }
}

TEST(FusedAdam, CheckpointsMoveBetweenFusedAndLibTorchsAdam) {
  register_builtin_optimizers();
  auto a = fused_test_params(torch::kFloat32);
  FusedAdam fused(a, torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 3; ++step) fused_test_step(fused, a, step);
  auto b = fused_test_params(torch::kFloat32);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  }
  torch::optim::Adam plain(b, torch::optim::AdamOptions(0.5));
  load_optimizer_state(plain, save_optimizer_state(fused), "optimizer.pt");
  EXPECT_EQ(plain.param_groups()[0].options().get_lr(), 1e-2);
  fused_test_step(fused, a, 3);
  fused_test_step(plain, b, 3);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << i;
}

}  // namespace
}  // namespace unitrain

namespace unitrain {
namespace {

/// The gradients of fused_test_step's loss at `step`, without the optimizer's step.
void graphed_test_gradients(std::vector<torch::Tensor>& params, int step) {
  for (auto& p : params) p.mutable_grad() = torch::Tensor();
  torch::Tensor loss = torch::zeros({});
  for (auto& p : params) loss = loss + (p * p * (0.5 + 0.1 * step)).sum() + p.sin().sum();
  loss.backward();
}

TEST(GraphedAdam, StepsAsLibTorchsAdamWWithItsCountAndLearningRateFromTheDevice) {
  auto a = fused_test_params(torch::kFloat32), b = fused_test_params(torch::kFloat32);
  // A learning rate float32 holds exactly: the kernel reads it as float32.
  const auto options = torch::optim::AdamWOptions(0.0078125).weight_decay(0.25);
  torch::optim::AdamW graphed_opt(a, options), plain(b, options);
  fused_test_step(graphed_opt, a, 0);  // states made by a first (eager) step
  fused_test_step(plain, b, 0);
  if (!has_fused_adam_tensor_lr()) {
    const std::string e = test::error_of<ConfigError>([&] { GraphedAdam g(graphed_opt); });
    EXPECT_TRUE(test::contains(e, "2.4 has")) << e;
    return;
  }
  GraphedAdam graphed(graphed_opt);
  for (int step = 1; step < 6; ++step) {
    if (step == 3) {  // a schedule moves the rate between steps
      for (auto* opt : {static_cast<torch::optim::Optimizer*>(&graphed_opt),
                        static_cast<torch::optim::Optimizer*>(&plain)}) {
        opt->param_groups()[0].options().set_lr(0.001953125);
      }
    }
    graphed_test_gradients(a, step);
    graphed.prepare();
    graphed.step();
    fused_test_step(plain, b, step);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6))
        << i << ": max difference " << (a[i] - b[i]).abs().max().item<float>();
  }
  const auto& sa = static_cast<const torch::optim::AdamWParamState&>(
      *graphed_opt.state().at(optimizer_state_key(a[3])));
  EXPECT_EQ(sa.step(), 6);  // counted on the host by prepare()
}

TEST(GraphedAdam, RefusesWhatTheKernelCannotStepNamingIt) {
  auto params = fused_test_params(torch::kFloat32);
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
  EXPECT_TRUE(test::contains(GraphedAdam::refusal(sgd), "not adam or adamw"));
  torch::optim::Adam amsgrad(params, torch::optim::AdamOptions(0.1).amsgrad(true));
  const std::string why = GraphedAdam::refusal(amsgrad);
  EXPECT_TRUE(test::contains(why, has_fused_adam_tensor_lr() ? "amsgrad" : "2.4 has")) << why;
  torch::optim::Adam adam(params, torch::optim::AdamOptions(0.1));
  EXPECT_EQ(GraphedAdam::refusal(adam).empty(), has_fused_adam_tensor_lr());
  // Before any step there is no state to step from.
  if (has_fused_adam_tensor_lr()) {
    const std::string e = test::error_of<ConfigError>([&] { GraphedAdam g(adam); });
    EXPECT_TRUE(test::contains(e, "has no optimizer state")) << e;
  }
}

}  // namespace
}  // namespace unitrain
