#include "unitrain/checkpoint/state_io.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

struct Net : torch::nn::Module {
  Net(int64_t in = 4, int64_t out = 3) {
    fc = register_module("fc", torch::nn::Linear(in, out));
    bn = register_module("bn", torch::nn::BatchNorm1d(out));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward(fc->forward(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

TEST(StateIo, TensorDictRoundTripKeepsNamesOrderValuesAndDtypes) {
  NamedTensors in = {{"z.weight", torch::randn({3, 2})},
                     {"a.count", torch::tensor({1, 2, 3}, torch::kLong)},
                     {"m.double", torch::randn({2}, torch::kDouble)},
                     {"flag", torch::tensor({true, false})}};
  NamedTensors out = load_tensor_dict(save_tensor_dict(in), "test");
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.scalar_type(), in[i].second.scalar_type());
    EXPECT_TRUE(torch::equal(out[i].second, in[i].second)) << in[i].first;
  }
}

TEST(StateIo, GarbageBytesAreATrainErrorNamingTheFile) {
  const std::string text = "not a pickle";
  const std::string m = test::message_of([&] { load_tensor_dict({text.begin(), text.end()}, "weights.pt"); });
  EXPECT_NE(m.find("weights.pt"), std::string::npos) << m;
  EXPECT_THROW(load_tensor_dict({text.begin(), text.end()}, "weights.pt"), TrainError);
}

TEST(StateIo, ModuleStateNamesAndCopies) {
  Net net;
  NamedTensors state = module_state(net, /*copy=*/true);
  std::vector<std::string> names;
  for (const auto& [n, t] : state) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias", "bn.weight", "bn.bias",
                                             "bn.running_mean", "bn.running_var",
                                             "bn.num_batches_tracked"}));
  {
    torch::NoGradGuard g;
    net.fc->weight.fill_(5);
  }
  EXPECT_FALSE(torch::equal(state[0].second, net.fc->weight));  // a snapshot, not a view
}

TEST(StateIo, LoadModuleStateStrictListsMissingUnexpectedAndMismatched) {
  Net source;
  NamedTensors state = module_state(source, true);
  Net target;
  load_module_state(target, state, true, "x.pt");
  EXPECT_TRUE(torch::equal(target.fc->weight, source.fc->weight));
  EXPECT_TRUE(torch::equal(target.bn->running_var, source.bn->running_var));

  NamedTensors bad;
  for (const auto& [n, t] : state) {
    if (n == "fc.bias") continue;  // missing
    bad.emplace_back(n, n == "fc.weight" ? torch::zeros({5, 5}) : t);  // mismatched
  }
  bad.emplace_back("head.weight", torch::zeros(2));  // unexpected
  const std::string m = test::message_of([&] { load_module_state(target, bad, true, "init.pt"); });
  for (const char* part : {"init.pt", "fc.bias", "head.weight", "fc.weight", "[5, 5]"}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  }
  EXPECT_THROW(load_module_state(target, bad, true, "init.pt"), ConfigError);
  // Not strict: still an error for the shape mismatch.
  EXPECT_THROW(load_module_state(target, bad, false, "init.pt"), ConfigError);
}

TEST(StateIo, LoadModuleStateNonStrictLoadsWhatMatches) {
  Net source, target;
  NamedTensors state = module_state(source, true);
  state.erase(state.begin() + 1);                         // fc.bias missing
  state.emplace_back("extra", torch::zeros(1));           // unexpected
  const torch::Tensor bias_before = target.fc->bias.clone();
  const std::string summary = load_module_state(target, state, false, "init.pt");
  EXPECT_TRUE(torch::equal(target.fc->weight, source.fc->weight));
  EXPECT_TRUE(torch::equal(target.fc->bias, bias_before));
  EXPECT_NE(summary.find("fc.bias"), std::string::npos) << summary;
  EXPECT_NE(summary.find("extra"), std::string::npos) << summary;
}

/// Trains `net` one step with `opt` on a fixed batch.
void step(Net& net, torch::optim::Optimizer& opt) {
  torch::manual_seed(11);
  opt.zero_grad();
  net.forward(torch::randn({8, 4})).pow(2).mean().backward();
  opt.step();
}

template <typename Opt, typename Options>
void expect_optimizer_round_trip(Options saved_options, Options other_options) {
  torch::manual_seed(1);
  Net a;
  Opt opt_a(a.parameters(), saved_options);
  step(a, opt_a);
  step(a, opt_a);
  const std::vector<char> bytes = save_optimizer_state(opt_a);

  Net b;
  load_module_state(b, module_state(a, true), true, "model");
  Opt opt_b(b.parameters(), other_options);
  load_optimizer_state(opt_b, bytes, "optimizer.pt");
  EXPECT_DOUBLE_EQ(opt_b.param_groups()[0].options().get_lr(), saved_options.get_lr());
  step(a, opt_a);
  step(b, opt_b);
  EXPECT_TRUE(torch::equal(a.fc->weight, b.fc->weight));
  EXPECT_TRUE(torch::equal(a.bn->bias, b.bn->bias));
}

TEST(StateIo, OptimizerStateRestoresGroupOptionsAndContinuesBitwise) {
  expect_optimizer_round_trip<torch::optim::Adam>(
      torch::optim::AdamOptions(0.01).betas({0.8, 0.95}).weight_decay(0.1),
      torch::optim::AdamOptions(0.5));
  expect_optimizer_round_trip<torch::optim::SGD>(
      torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true), torch::optim::SGDOptions(1.0));

  torch::manual_seed(1);
  Net a;
  torch::optim::Adam adam(a.parameters(), torch::optim::AdamOptions(0.01).betas({0.8, 0.95}));
  step(a, adam);
  Net b;
  torch::optim::Adam fresh(b.parameters(), torch::optim::AdamOptions(0.5));
  load_optimizer_state(fresh, save_optimizer_state(adam), "optimizer.pt");
  const auto& o = static_cast<const torch::optim::AdamOptions&>(fresh.param_groups()[0].options());
  EXPECT_DOUBLE_EQ(std::get<0>(o.betas()), 0.8);
  EXPECT_DOUBLE_EQ(std::get<1>(o.betas()), 0.95);
}

TEST(StateIo, OptimizerStateOfAnotherTypeIsATrainError) {
  Net a, b;
  torch::optim::SGD sgd(a.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  step(a, sgd);
  torch::optim::Adam adam(b.parameters(), torch::optim::AdamOptions(0.1));
  const std::string m = test::message_of([&] { load_optimizer_state(adam, save_optimizer_state(sgd), "optimizer.pt"); });
  EXPECT_NE(m.find("optimizer.pt"), std::string::npos) << m;
}

TEST(StateIo, GradientStateRoundTrip) {
  Net a;
  a.forward(torch::randn({4, 4})).sum().backward();
  NamedTensors grads = gradient_state(a);
  ASSERT_FALSE(grads.empty());
  Net b;
  load_gradient_state(b, grads, "grads.pt");
  EXPECT_TRUE(torch::equal(b.fc->weight.grad(), a.fc->weight.grad()));
  EXPECT_TRUE(torch::equal(b.bn->weight.grad(), a.bn->weight.grad()));
}

TEST(StateIo, RngStateRepeatsRandomNumbers) {
  torch::manual_seed(123);
  torch::rand({3});
  NamedTensors state = rng_state();
  const torch::Tensor first = torch::rand({5});
  torch::rand({7});
  load_rng_state(load_tensor_dict(save_tensor_dict(state), "rng"), "rng");
  EXPECT_TRUE(torch::equal(torch::rand({5}), first));
}

}  // namespace
}  // namespace unitrain
