// Losses and regularizers against values computed by PyTorch (make_loss_expected.py).
#include "unitrain/objective/loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/metrics/shape_check.h"

namespace unitrain {
namespace {

using nlohmann::json;

nlohmann::json load_cases() {
  std::ifstream in(test::source_dir() + "/tests/objective/loss_expected.json");
  EXPECT_TRUE(in.good()) << "missing tests/objective/loss_expected.json";
  return json::parse(in)["cases"];
}

torch::Tensor from_json(const json& t) {
  std::vector<int64_t> shape = t["shape"].get<std::vector<int64_t>>();
  if (t["dtype"] == "int64") {
    return torch::tensor(t["data"].get<std::vector<int64_t>>(), torch::kLong).reshape(shape);
  }
  return torch::tensor(t["data"].get<std::vector<float>>(), torch::kFloat).reshape(shape);
}

// Resolves `{type, args}` against the registered schema, as the objective section does.
Config component(const std::string& kind, const std::string& type, const std::string& args) {
  Config in = Config::from_string("{type: " + type + ", args: " + args + "}", "test");
  YAML::Node out(YAML::NodeType::Map);
  resolve_component(kind, "", in.node(), out, kind);
  return Config(out, kind);
}

LossFn make_loss(const std::string& type, const std::string& args = "{}") {
  register_builtin_losses();
  return loss_registry().create(component("loss", type, args));
}

std::vector<float> to_vector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kFloat).contiguous().flatten();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

TEST(LossTest, MatchesPyTorchValuesAndGradients) {
  register_builtin_losses();
  register_builtin_regularizers();
  json cases = load_cases();
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    torch::Tensor pred = from_json(c["pred"]).requires_grad_(true);
    torch::Tensor target = from_json(c["target"]);
    torch::Tensor value;
    if (c["kind"] == "loss") {
      value = make_loss(c["type"], c["args"].dump())(pred, target);
    } else {
      // Regularizer over two tensors: pred holds both, target their sizes.
      auto fn = regularizer_registry().create(component("regularizer", c["type"], "{}"));
      int64_t first = target[0].item<int64_t>();
      value = fn({pred.slice(0, 0, first).view({3, 4}), pred.slice(0, first)});
    }
    ASSERT_EQ(value.dim(), 0);
    EXPECT_NEAR(value.item<double>(), c["expected"].get<double>(), 1e-5);
    value.backward();
    std::vector<float> grad = to_vector(pred.grad());
    std::vector<double> expected = c["grad"].get<std::vector<double>>();
    ASSERT_EQ(grad.size(), expected.size());
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected[i], 1e-6) << i;
  }
}

std::string error_of(const LossFn& fn, const torch::Tensor& pred, const torch::Tensor& target) {
  try {
    fn(pred, target);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LossTest, CrossEntropyShapeMismatchNamesLossAndShapes) {
  auto ce = make_loss("cross_entropy");
  std::string msg = error_of(ce, torch::randn({32, 10}), torch::zeros({32, 3}, torch::kLong));
  EXPECT_NE(msg.find("loss 'cross_entropy': prediction shape [32, 10] does not fit target shape "
                     "[32, 3]; cross_entropy expects logits [B, C]"),
            std::string::npos)
      << msg;
  // PyTorch's own [B, C, T] layout is not taken for [B, T, C].
  msg = error_of(ce, torch::randn({2, 7, 5}), torch::zeros({2, 5}, torch::kLong));
  EXPECT_NE(msg.find("prediction shape [2, 7, 5] does not fit target shape [2, 5]"),
            std::string::npos)
      << msg;
}

TEST(LossTest, MseRefusesToBroadcast) {
  auto mse = make_loss("mse");
  // [B, 1] vs [B] is accepted element-wise (not broadcast to [B, B]).
  torch::Tensor pred = torch::tensor({{1.0f}, {2.0f}, {4.0f}});
  torch::Tensor target = torch::tensor({1.0f, 3.0f, 1.0f});
  EXPECT_NEAR(mse(pred, target).item<double>(), (0 + 1 + 9) / 3.0, 1e-6);
  EXPECT_NEAR(mse(target, pred).item<double>(), (0 + 1 + 9) / 3.0, 1e-6);
  // Anything else that PyTorch would broadcast is an error with a fix.
  std::string msg = error_of(mse, torch::randn({4, 2}), torch::randn({4}));
  EXPECT_NE(msg.find("loss 'mse': prediction shape [4, 2] does not fit target shape [4]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("nothing else is broadcast"), std::string::npos) << msg;
  EXPECT_NE(error_of(mse, torch::randn({4, 1}), torch::randn({1, 4})), "(no error)");
  EXPECT_NE(error_of(make_loss("bce_with_logits"), torch::randn({4, 3}), torch::randn({3})),
            "(no error)");
}

TEST(LossTest, TorchErrorsBecomeConfigErrors) {
  auto ce = make_loss("cross_entropy");
  std::string msg = error_of(ce, torch::randn({2, 3}), torch::tensor({0, 7}));
  EXPECT_NE(msg.find("loss 'cross_entropy'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  msg = error_of(ce, torch::randn({2, 3}), torch::tensor({0.5f, 1.0f}));
  EXPECT_NE(msg.find("fractional"), std::string::npos) << msg;
}

TEST(LossTest, PredictionTargetErrorCanNameTheTensors) {
  auto l1 = make_loss("l1");
  try {
    l1(torch::randn({2, 2}), torch::randn({2, 3}));
    FAIL() << "no error";
  } catch (const PredictionTargetError& e) {
    EXPECT_EQ(e.named("out", "y")
                  .rfind("loss 'l1' (prediction 'out' vs target 'y'): prediction "
                         "shape [2, 2] does not fit target shape [2, 3]; l1 ",
                         0),
              0u)
        << e.named("out", "y");
  }
}

TEST(LossTest, MeanIsOverCountedTargetsAsInPyTorch) {
  // One reduction, as PyTorch does it: no extra ops on the hot path. A batch whose every
  // target is ignored has no mean (NaN), which train.on_nonfinite then handles.
  auto ce = make_loss("cross_entropy");
  torch::Tensor logits = torch::randn({2, 3, 4});
  torch::Tensor target = torch::tensor({{0, -100, 2}, {-100, -100, 1}});
  torch::Tensor expected =
      (torch::nn::functional::cross_entropy(
           logits.reshape({-1, 4}), target.reshape({-1}),
           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
       3.0);
  EXPECT_TRUE(torch::allclose(ce(logits, target), expected));
  EXPECT_TRUE(std::isnan(ce(logits, torch::full({2, 3}, -100, torch::kLong)).item<double>()));
}

TEST(LossTest, ArgsAreValidated) {
  register_builtin_losses();
  EXPECT_THROW(component("loss", "cross_entropy", "{label_smoothing: 1.5}"), ConfigError);
  EXPECT_THROW(component("loss", "smooth_l1", "{beta: -1}"), ConfigError);
  EXPECT_THROW(component("loss", "bce_with_logits", "{pos_weight: 0}"), ConfigError);
  EXPECT_THROW(component("loss", "mse", "{beta: 1}"), ConfigError);
  try {
    component("loss", "cross_entropie", "{}");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy"), std::string::npos) << e.what();
  }
}

TEST(LossTest, KlDivTakesLogitsOfOneShape) {
  auto kl = make_loss("kl_div", "{temperature: 4}");
  torch::Tensor logits = torch::randn({3, 5});
  EXPECT_NEAR(kl(logits, logits.clone()).item<double>(), 0.0, 1e-6);  // agreeing: nothing
  EXPECT_NEAR(kl(logits, logits + 2.5).item<double>(), 0.0, 1e-6);    // softmax ignores a shift
  std::string msg = error_of(kl, logits, torch::zeros({3}, torch::kLong));
  EXPECT_NE(msg.find("loss 'kl_div': prediction shape [3, 5] does not fit target shape [3]; "
                     "kl_div expects student logits"),
            std::string::npos)
      << msg;
  msg = error_of(kl, torch::randn({5}), torch::randn({5}));
  EXPECT_NE(msg.find("prediction shape [5] does not fit"), std::string::npos) << msg;
  EXPECT_THROW(component("loss", "kl_div", "{temperature: 0}"), ConfigError);
  // Every token counts: a [B, T, C] loss equals the [B * T, C] one.
  torch::Tensor s = torch::randn({2, 3, 4}), t = torch::randn({2, 3, 4});
  EXPECT_NEAR(kl(s, t).item<double>(), kl(s.view({6, 4}), t.view({6, 4})).item<double>(), 1e-6);
}

TEST(RegularizerTest, EmptySetIsZeroAndL2IsHalfSumOfSquares) {
  register_builtin_regularizers();
  auto l2 = regularizer_registry().create(component("regularizer", "l2", "{}"));
  auto l1 = regularizer_registry().create(component("regularizer", "l1", "{}"));
  EXPECT_EQ(l2({}).item<double>(), 0.0);
  torch::Tensor w = torch::tensor({3.0f, -4.0f});
  EXPECT_NEAR(l2({w}).item<double>(), 12.5, 1e-6);
  EXPECT_NEAR(l1({w, torch::tensor({{-1.0f}})}).item<double>(), 8.0, 1e-6);
}

}  // namespace
}  // namespace unitrain
