#include "unitrain/optim/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"

namespace unitrain {
namespace {

using nlohmann::json;

Config section(const std::string& yaml) {
  return Config(Config::from_string(yaml).node(), "optimizer");
}

// A nested JSON list of numbers as a float64 tensor of the same shape.
torch::Tensor to_tensor(const json& j) {
  std::vector<double> flat;
  std::vector<int64_t> shape;
  const json* level = &j;
  while (level->is_array()) {
    shape.push_back(static_cast<int64_t>(level->size()));
    level = &(*level)[0];
  }
  std::function<void(const json&)> collect = [&](const json& x) {
    if (x.is_array()) {
      for (const auto& e : x) collect(e);
    } else {
      flat.push_back(x.get<double>());
    }
  };
  collect(j);
  return torch::tensor(flat, torch::kFloat64).reshape(shape);
}

// The fixed problem of make_optimizer_expected.py.
struct Problem : torch::nn::Module {
  explicit Problem(const json& init) {
    weight = register_parameter("weight", to_tensor(init["weight"]));
    bias = register_parameter("bias", to_tensor(init["bias"]));
    scale = register_parameter("scale", to_tensor(init["scale"]));
  }
  torch::Tensor loss(const torch::Tensor& x, const torch::Tensor& y) const {
    auto w = weight * scale.unsqueeze(1);
    return (x.matmul(w.t()) + bias - y).pow(2).mean() + 0.05 * weight.pow(4).sum();
  }
  torch::Tensor weight, bias, scale;
};

json load_expected() {
  std::ifstream in(test::source_dir() + "/tests/optim/optimizer_expected.json");
  EXPECT_TRUE(in.good()) << "missing tests/optim/optimizer_expected.json";
  return json::parse(in);
}

void expect_close(const torch::Tensor& actual, const json& expected, const std::string& what) {
  auto want = to_tensor(expected);
  ASSERT_EQ(actual.sizes(), want.sizes()) << what;
  auto a = actual.detach().flatten();
  auto w = want.flatten();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double av = a[i].item<double>(), wv = w[i].item<double>();
    EXPECT_NEAR(av, wv, 1e-6 * std::max(1.0, std::abs(wv))) << what << "[" << i << "]";
  }
}

}  // namespace

// Outside the anonymous namespace, as the TEST_F classes derived from it are.
class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override { register_builtin_optimizers(); }
};

TEST_F(OptimizerTest, MatchesPyTorchOnAFixedProblem) {
  const json expected = load_expected();
  const auto x = to_tensor(expected["x"]);
  const auto y = to_tensor(expected["y"]);
  ASSERT_GE(expected["cases"].size(), 12u);
  std::set<std::string> covered;
  for (const auto& c : expected["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    Problem problem(expected["initial"]);
    auto optimizer = build_optimizer(section(c["section"].dump()), problem);
    covered.insert(c["section"]["type"].get<std::string>());
    EXPECT_EQ(needs_closure(*optimizer), c["section"]["type"] == "lbfgs");
    auto closure = [&] {
      optimizer->zero_grad();
      auto loss = problem.loss(x, y);
      loss.backward();
      return loss;
    };
    for (size_t step = 0; step < c["params"].size(); ++step) {
      if (needs_closure(*optimizer)) {
        optimizer->step(closure);
      } else {
        closure();
        optimizer->step();
      }
      const auto& want = c["params"][step];
      const std::string at = name + " step " + std::to_string(step + 1);
      expect_close(problem.weight, want["weight"], at + " weight");
      expect_close(problem.bias, want["bias"], at + " bias");
      expect_close(problem.scale, want["scale"], at + " scale");
    }
  }
  for (const auto* info : catalog::of_kind("optimizer")) {
    EXPECT_TRUE(covered.count(info->name)) << "no parity case for optimizer " << info->name;
  }
}

struct Net : torch::nn::Module {
  Net() {
    linear = register_module("linear", torch::nn::Linear(4, 3));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({3})));
    frozen = register_parameter("frozen", torch::ones({2, 2}), /*requires_grad=*/false);
    temperature = register_parameter("temperature", torch::ones({}));
  }
  torch::nn::Linear linear{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::Tensor frozen, temperature;
};

TEST_F(OptimizerTest, SplitsBiasesAndOneDimParametersIntoTheNoDecayGroup) {
  Net net;
  auto same = [](const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].is_same(want[i])) return false;
    }
    return true;
  };
  ParamGroups split = split_params(net, true);
  EXPECT_TRUE(same(split.decay, {net.linear->weight}));
  EXPECT_TRUE(
      same(split.no_decay, {net.temperature, net.linear->bias, net.norm->weight, net.norm->bias}));
  ParamGroups all = split_params(net, false);
  EXPECT_EQ(all.decay.size(), 5u);  // every trainable parameter; not `frozen`
  EXPECT_TRUE(all.no_decay.empty());
  for (const auto& p : all.decay) EXPECT_FALSE(p.is_same(net.frozen));
}

TEST_F(OptimizerTest, NoDecayGroupHasZeroWeightDecay) {
  Net net;
  auto opt = build_optimizer(section("{type: adamw, lr: 0.02, no_decay_bias_norm: true}"), net);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  const auto& decayed =
      static_cast<const torch::optim::AdamWOptions&>(opt->param_groups()[0].options());
  const auto& plain = static_cast<const torch::optim::AdamWOptions&>(
      opt->param_groups()[no_decay_group_index()].options());
  EXPECT_DOUBLE_EQ(decayed.weight_decay(), 0.01);  // AdamW's default
  EXPECT_DOUBLE_EQ(plain.weight_decay(), 0.0);
  EXPECT_EQ(opt->param_groups()[1].params().size(), 4u);
  EXPECT_DOUBLE_EQ(get_lr(*opt, 1), 0.02);

  auto one = build_optimizer(section("{type: sgd, lr: 0.1, args: {weight_decay: 0.1}}"), net);
  ASSERT_EQ(one->param_groups().size(), 1u);
  EXPECT_EQ(one->param_groups()[0].params().size(), 5u);
  // LBFGS takes one group: the split is merged.
  auto lbfgs = build_optimizer(section("{type: lbfgs, lr: 1, no_decay_bias_norm: true}"), net);
  ASSERT_EQ(lbfgs->param_groups().size(), 1u);
  EXPECT_EQ(lbfgs->param_groups()[0].params().size(), 5u);
}

TEST_F(OptimizerTest, DefaultsToAdamAndReadsAndWritesLr) {
  Net net;
  auto opt = build_optimizer(section("{}"), net);
  ASSERT_NE(dynamic_cast<torch::optim::Adam*>(opt.get()), nullptr);
  EXPECT_DOUBLE_EQ(get_lr(*opt), 1e-3);
  set_lr(*opt, 0, 0.25);
  EXPECT_DOUBLE_EQ(get_lr(*opt, 0), 0.25);
  EXPECT_DOUBLE_EQ(opt->param_groups()[0].options().get_lr(), 0.25);
  EXPECT_NE(test::config_error_of([&] { get_lr(*opt, 3); }).find("group 3 does not exist"),
            std::string::npos);
  EXPECT_FALSE(needs_closure(*opt));
}

/// An SGD that says it re-evaluates the loss in its step (as a plugin's optimizer would).
struct ClosureSgd : torch::optim::SGD {
  using torch::optim::SGD::SGD;
};
/// An SGD subclass that declares nothing.
struct PlainSgd : torch::optim::SGD {
  using torch::optim::SGD::SGD;
};
/// torch's LBFGS, subclassed by a user.
struct MyLbfgs : torch::optim::LBFGS {
  using torch::optim::LBFGS::LBFGS;
};

TEST_F(OptimizerTest, NeedsClosureIsDeclaredWhereTheOptimizerRegisters) {
  Net net;
  std::vector<torch::Tensor> params = net.parameters();
  // lbfgs from the registry, and torch's LBFGS built in C++ (a configure_optimizer override).
  EXPECT_TRUE(needs_closure(*build_optimizer(section("{type: lbfgs}"), net)));
  EXPECT_TRUE(needs_closure(torch::optim::LBFGS(params, torch::optim::LBFGSOptions(1))));
  EXPECT_TRUE(needs_closure(MyLbfgs(params, torch::optim::LBFGSOptions(1))));
  // A declared type answers yes; the others no.
  declare_needs_closure<ClosureSgd>();
  EXPECT_TRUE(needs_closure(ClosureSgd(params, torch::optim::SGDOptions(0.1))));
  EXPECT_FALSE(needs_closure(PlainSgd(params, torch::optim::SGDOptions(0.1))));
  EXPECT_FALSE(needs_closure(torch::optim::SGD(params, torch::optim::SGDOptions(0.1))));
  for (const char* type : {"sgd", "adam", "adamw", "adagrad", "rmsprop"}) {
    EXPECT_FALSE(needs_closure(*build_optimizer(section(std::string("{type: ") + type + "}"), net)))
        << type;
  }
}

/// A user's optimizer whose step is elementwise, declared so.
struct ElementwiseSgd : torch::optim::SGD {
  using torch::optim::SGD::SGD;
};

TEST_F(OptimizerTest, AnElementwiseStepIsDeclaredNotFoundByItsType) {
  Net net;
  std::vector<torch::Tensor> params = net.parameters();
  // The fused Adam(W) of the registry keep ZeRO 3's reproducible promise; with amsgrad, or
  // LibTorch's own step, they do not, and the refusal says why.
  for (const char* type : {"adam", "adamw"}) {
    const std::string fused = std::string("{type: ") + type + ", args: {fused: true}}";
    EXPECT_EQ(elementwise_step_refusal(*build_optimizer(section(fused), net)), "") << type;
    const std::string amsgrad =
        std::string("{type: ") + type + ", args: {fused: true, amsgrad: true}}";
    EXPECT_NE(elementwise_step_refusal(*build_optimizer(section(amsgrad), net)).find("amsgrad"),
              std::string::npos)
        << type;
  }
  EXPECT_NE(elementwise_step_refusal(torch::optim::Adam(params)), "");
  EXPECT_NE(elementwise_step_refusal(*build_optimizer(section("{type: sgd}"), net)), "");
  declare_elementwise_step(optimizer_is<ElementwiseSgd>(),
                           [](const torch::optim::Optimizer&) { return std::string(); });
  EXPECT_EQ(elementwise_step_refusal(ElementwiseSgd(params, torch::optim::SGDOptions(0.1))), "");
}

TEST_F(OptimizerTest, ArgsMapToLibTorchOptions) {
  Net net;
  auto opt = build_optimizer(
      section("{type: rmsprop, lr: 0.5, args: {alpha: 0.9, momentum: 0.3, centered: true}}"), net);
  const auto& o = static_cast<const torch::optim::RMSpropOptions&>(opt->defaults());
  EXPECT_DOUBLE_EQ(o.lr(), 0.5);
  EXPECT_DOUBLE_EQ(o.alpha(), 0.9);
  EXPECT_DOUBLE_EQ(o.momentum(), 0.3);
  EXPECT_TRUE(o.centered());
  EXPECT_DOUBLE_EQ(o.eps(), 1e-8);
  auto lb = build_optimizer(
      section("{type: lbfgs, args: {max_eval: 7, line_search_fn: strong_wolfe}}"), net);
  const auto& l = static_cast<const torch::optim::LBFGSOptions&>(lb->defaults());
  EXPECT_EQ(l.max_eval().value(), 7);
  EXPECT_EQ(l.line_search_fn().value(), "strong_wolfe");
  EXPECT_EQ(l.history_size(), 100);
}

TEST_F(OptimizerTest, BadSectionsGiveErrorsNamingTheKey) {
  Net net;
  auto err = [&](const std::string& yaml) {
    return test::config_error_of([&] { build_optimizer(section(yaml), net); });
  };
  std::string msg = err("{type: sgd, lr: -1}");
  EXPECT_NE(msg.find("optimizer.lr must be > 0, got -1"), std::string::npos) << msg;
  msg = err("{type: sgd, lr: 0}");
  EXPECT_NE(msg.find("optimizer.lr must be > 0"), std::string::npos) << msg;
  msg = err("{type: adamx}");
  EXPECT_NE(msg.find("unknown optimizer 'adamx' at optimizer.type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("known: adagrad, adam, adamw, lbfgs, rmsprop, sgd"), std::string::npos) << msg;
  msg = err("{type: sgd, args: {nesterov: true}}");
  EXPECT_NE(msg.find("optimizer.args.nesterov"), std::string::npos) << msg;
  EXPECT_NE(msg.find("momentum > 0 and dampening 0"), std::string::npos) << msg;
  msg = err("{type: sgd, args: {nesterov: true, momentum: 0.9, dampening: 0.1}}");
  EXPECT_NE(msg.find("dampening 0.1"), std::string::npos) << msg;
  msg = err("{type: sgd, args: {momentun: 0.9}}");
  EXPECT_NE(msg.find("did you mean 'optimizer.args.momentum'"), std::string::npos) << msg;
  msg = err("{type: adam, args: {betas: [0.9, 0.99, 0.5]}}");
  EXPECT_NE(msg.find("optimizer.args.betas must be two numbers"), std::string::npos) << msg;
  msg = err("{type: adam, args: {betas: [0.9, 1.0]}}");
  EXPECT_NE(msg.find("optimizer.args.betas values must be in [0, 1)"), std::string::npos) << msg;
  msg = err("{type: lbfgs, args: {line_search_fn: wolfe}}");
  EXPECT_NE(msg.find("optimizer.args.line_search_fn"), std::string::npos) << msg;
  msg = err("{type: adam, weight_decay: 0.1}");
  EXPECT_NE(msg.find("unknown key 'optimizer.weight_decay'"), std::string::npos) << msg;

  torch::nn::Module empty;
  msg = test::config_error_of([&] { build_optimizer(section("{}"), empty); });
  EXPECT_NE(msg.find("no trainable parameters"), std::string::npos) << msg;
}

/// An SGD whose step a plugin says can be captured: its CapturedStep counts its calls.
struct CapturedSgd : torch::optim::SGD {
  using torch::optim::SGD::SGD;
};
struct CountingStep : CapturedStep {
  int* prepares;
  explicit CountingStep(int* p) : prepares(p) {}
  void prepare() override { ++*prepares; }
  void step() override {}
};

TEST_F(OptimizerTest, ACapturedStepIsDeclaredWhereTheOptimizerRegisters) {
  Net net;
  std::vector<torch::Tensor> params = net.parameters();
  // adam and adamw (and their fused subclasses) from the start; others say none was declared.
  auto adamw = build_optimizer(section("{type: adamw}"), net);
  EXPECT_NE(capture_of(*adamw), nullptr);
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(0.1));
  EXPECT_EQ(capture_of(sgd), nullptr);
  EXPECT_TRUE(test::contains(capture_refusal(sgd), "declares no captured step"))
      << capture_refusal(sgd);
  // A plugin's declaration: its refusal, its state test and its step are the ones used.
  static int prepares = 0;
  StepCapture mine;
  mine.refusal = [](const torch::optim::Optimizer& o) {
    return get_lr(o) > 1 ? std::string("its lr is above 1") : std::string();
  };
  mine.has_state = [](const torch::optim::Optimizer&) { return true; };
  mine.make = [](torch::optim::Optimizer&) -> std::unique_ptr<CapturedStep> {
    return std::make_unique<CountingStep>(&prepares);
  };
  declare_capturable(optimizer_is<CapturedSgd>(), mine);
  CapturedSgd ok(params, torch::optim::SGDOptions(0.1));
  CapturedSgd high(params, torch::optim::SGDOptions(2.0));
  EXPECT_EQ(capture_refusal(ok), "");
  EXPECT_EQ(capture_refusal(high), "its lr is above 1");
  auto step = capture_of(ok)->make(ok);
  step->prepare();
  EXPECT_EQ(prepares, 1);
  EXPECT_EQ(capture_of(sgd), nullptr);  // a plain SGD is still not one
}

}  // namespace unitrain
