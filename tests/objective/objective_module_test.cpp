// ObjectiveModule with a tiny test-only model: predictions, weighted losses, regularizers,
// metrics and the errors a bad config or batch gives.
#include "unitrain/objective/objective_module.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// x [B, 3] -> logits [B, 4] and value [B, 1], with fixed weights.
struct TwoHeads : Model {
  torch::nn::Linear cls{nullptr}, reg{nullptr};
  std::vector<std::string> names;
  explicit TwoHeads(std::vector<std::string> n = {}) : names(std::move(n)) {
    cls = register_module("cls", torch::nn::Linear(3, 4));
    reg = register_module("reg", torch::nn::Linear(3, 1));
    torch::NoGradGuard no_grad;
    cls->weight.copy_(torch::arange(12, torch::kFloat).view({4, 3}) / 10 - 0.5);
    cls->bias.copy_(torch::tensor({0.1f, -0.2f, 0.3f, 0.0f}));
    reg->weight.copy_(torch::tensor({{0.5f, -1.0f, 2.0f}}));
    reg->bias.fill_(0.25);
  }
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& in) override {
    if (!names.empty()) return {reg->forward(in[0]), cls->forward(in[0])};  // named, reordered
    return {cls->forward(in[0]), reg->forward(in[0])};
  }
  std::vector<std::string> prediction_names() const override { return names; }
};

// As the Trainer passes it: the `objective` section of the whole config.
Config objective(const std::string& yaml) {
  return Config(Config::from_string(yaml).node(), "objective");
}

Batch batch() {
  return Batch{{"x", torch::tensor({{1.0f, 0.0f, -1.0f}, {0.5f, 2.0f, 0.0f}})},
               {"y", torch::tensor({3, 0})},
               {"v", torch::tensor({1.0f, -2.0f})}};
}

const char* kTwoLosses = R"(
predictions: [logits, value]
losses:
  - {type: cross_entropy, prediction: logits, target: y, weight: 0.5}
  - {type: mse, prediction: value, target: v, weight: 2.0}
metrics:
  - {type: accuracy}
  - {type: mae, prediction: value, target: v, name: value_mae}
)";

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(ObjectiveModuleTest, WeightedLossesAndMetrics) {
  auto model = std::make_shared<TwoHeads>();
  ObjectiveModule module(model, objective(kTwoLosses));
  Batch b = batch();
  StepOutput out = module.training_step(b);

  torch::Tensor logits = model->cls->forward(b.at("x"));
  torch::Tensor value = model->reg->forward(b.at("x")).view({2});
  double ce = torch::nn::functional::cross_entropy(logits, b.at("y")).item<double>();
  double mse = (value - b.at("v")).square().mean().item<double>();
  EXPECT_NEAR(out.loss.item<double>(), 0.5 * ce + 2.0 * mse, 1e-5);
  EXPECT_NEAR(out.metrics.at("loss_cross_entropy").value.item<double>(), ce, 1e-5);
  EXPECT_NEAR(out.metrics.at("loss_mse").value.item<double>(), mse, 1e-5);
  double acc = (logits.argmax(1) == b.at("y")).to(torch::kDouble).mean().item<double>();
  EXPECT_DOUBLE_EQ(out.metrics.at("accuracy").value.item<double>(), acc);
  EXPECT_NEAR(out.metrics.at("value_mae").value.item<double>(),
              (value - b.at("v")).abs().mean().item<double>(), 1e-5);
  EXPECT_EQ(out.metrics.size(), 4u);

  out.loss.backward();
  EXPECT_GT(model->cls->weight.grad().abs().sum().item<double>(), 0);
  EXPECT_GT(model->reg->weight.grad().abs().sum().item<double>(), 0);
  for (const auto& p : module.named_parameters()) EXPECT_EQ(p.key().rfind("model.", 0), 0u);
}

TEST(ObjectiveModuleTest, EachLoggedNameHasTheDirectionItsTermDeclares) {
  ObjectiveModule module(
      std::make_shared<TwoHeads>(),
      objective(std::string(kTwoLosses) + "  - {type: accuracy, name: acc}\n"
                                          "regularizers: [{type: l2, weight: 0.1}]\n"));
  constexpr auto kLower = MetricDirection::LowerIsBetter;
  for (const char* name : {"loss", "loss_cross_entropy", "loss_mse", "reg_l2", "value_mae"}) {
    EXPECT_EQ(module.metric_direction(name), kLower) << name;
  }
  // A metric renamed in the config keeps its type's direction.
  for (const char* name : {"accuracy", "acc"}) {
    EXPECT_EQ(module.metric_direction(name), MetricDirection::HigherIsBetter) << name;
  }
  // Names the objective does not log: no direction (mae is only a type here).
  for (const char* name : {"mae", "loss_l2", "reg_mse", "lr"}) {
    EXPECT_FALSE(module.metric_direction(name).has_value()) << name;
  }
}

TEST(ObjectiveModuleTest, OneLossReportsNoTerms) {
  ObjectiveModule module(
      std::make_shared<TwoHeads>(),
      objective("{predictions: [logits, value], losses: [{type: cross_entropy}]}"));
  StepOutput out = module.validation_step(batch());
  EXPECT_TRUE(out.metrics.empty());
  EXPECT_EQ(module.inputs(), std::vector<std::string>{"x"});
}

TEST(ObjectiveModuleTest, RegularizersAddTheirWeightedPenalty) {
  auto model = std::make_shared<TwoHeads>();
  const std::string base = "predictions: [logits, value]\nlosses: [{type: cross_entropy}]\n";
  double plain = ObjectiveModule(model, objective(base)).training_step(batch()).loss.item<double>();

  double w2 = model->cls->weight.square().sum().item<double>() +
              model->reg->weight.square().sum().item<double>();
  double b2 = model->cls->bias.square().sum().item<double>() +
              model->reg->bias.square().sum().item<double>();
  StepOutput l2 =
      ObjectiveModule(model, objective(base + "regularizers: [{type: l2, weight: 0.1}]"))
          .training_step(batch());
  EXPECT_NEAR(l2.loss.item<double>() - plain, 0.1 * 0.5 * w2, 1e-5);
  EXPECT_NEAR(l2.metrics.at("reg_l2").value.item<double>(), 0.5 * w2, 1e-5);
  EXPECT_NEAR(l2.metrics.at("loss_cross_entropy").value.item<double>(), plain, 1e-6);

  StepOutput with_bias =
      ObjectiveModule(model, objective(base + "regularizers: [{type: l2, weight: 0.1, "
                                              "include_bias: true}]"))
          .training_step(batch());
  EXPECT_NEAR(with_bias.loss.item<double>() - plain, 0.1 * 0.5 * (w2 + b2), 1e-5);

  // On a prediction: the penalty per example.
  Batch b = batch();
  double act = model->reg->forward(b.at("x")).abs().sum().item<double>() / 2;
  StepOutput on_pred =
      ObjectiveModule(model, objective(base + "regularizers: [{type: l1, weight: 0.3, "
                                              "target: value, name: act}]"))
          .training_step(b);
  EXPECT_NEAR(on_pred.loss.item<double>() - plain, 0.3 * act, 1e-5);
  EXPECT_NEAR(on_pred.metrics.at("reg_act").value.item<double>(), act, 1e-5);
}

TEST(ObjectiveModuleTest, ShapeMismatchNamesLossTensorsAndShapes) {
  ObjectiveModule module(std::make_shared<TwoHeads>(),
                         objective("{predictions: [logits, value], losses: [{type: mse}]}"));
  Batch b = batch();
  b.set("y", torch::zeros({2, 3}));
  std::string msg = test::config_error_of([&] { module.training_step(b); });
  EXPECT_HAS(msg,
             "loss 'mse' (prediction 'logits' vs target 'y'): prediction shape [2, 4] "
             "does not fit target shape [2, 3]; mse expects");

  ObjectiveModule ce(std::make_shared<TwoHeads>(),
                     objective("{predictions: [logits, value], losses: [{type: cross_entropy, "
                               "prediction: value, target: v}]}"));
  msg = test::config_error_of([&] { ce.training_step(batch()); });
  EXPECT_HAS(msg, "loss 'cross_entropy' (prediction 'value' vs target 'v'):");

  ObjectiveModule metric(std::make_shared<TwoHeads>(),
                         objective("{predictions: [logits, value], losses: [{type: cross_entropy}],"
                                   " metrics: [{type: mse, prediction: value, target: z}]}"));
  b = batch();
  b.set("z", torch::zeros({2, 2}));
  msg = test::config_error_of([&] { metric.training_step(b); });
  EXPECT_HAS(msg,
             "metric 'mse' (prediction 'value' vs target 'z'): prediction shape [2, 1] "
             "does not fit target shape [2, 2]");
}

TEST(ObjectiveModuleTest, UnknownPredictionIsAConfigError) {
  auto model = std::make_shared<TwoHeads>();
  std::string msg = test::config_error_of([&] {
    ObjectiveModule(model, objective("{predictions: [logits, value], "
                                     "losses: [{type: cross_entropy, prediction: logitz}]}"));
  });
  EXPECT_HAS(msg, "objective.losses.0.prediction: 'logitz' is not a prediction");
  EXPECT_HAS(msg, "logits, value");
  msg = test::config_error_of([&] {
    ObjectiveModule(model, objective("{losses: [{type: cross_entropy}], "
                                     "metrics: [{type: accuracy, prediction: probs}]}"));
  });
  EXPECT_HAS(msg, "objective.metrics.0.prediction: 'probs' is not a prediction");
  msg = test::config_error_of([&] {
    ObjectiveModule(model, objective("{losses: [{type: cross_entropy}], "
                                     "regularizers: [{type: l2, weight: 1, target: parms}]}"));
  });
  EXPECT_HAS(msg, "objective.regularizers.0.target: 'parms' is neither 'params' nor a prediction");
}

TEST(ObjectiveModuleTest, ConstructionChecks) {
  auto model = std::make_shared<TwoHeads>();
  EXPECT_HAS(test::config_error_of([&] { ObjectiveModule(model, objective("{losses: []}")); }),
             "objective.losses must list at least one loss");
  EXPECT_HAS(test::config_error_of([&] { ObjectiveModule(model, objective("{}")); }),
             "objective.losses must list at least one loss");
  // A standalone section (library use, no key path) still names objective.* keys.
  EXPECT_HAS(
      test::config_error_of([&] { ObjectiveModule(model, Config::from_string("{losses: []}")); }),
      "objective.losses must list at least one loss");
  EXPECT_HAS(test::config_error_of([&] {
               ObjectiveModule(model, objective("{losses: [{type: mse}, {type: mse}]}"));
             }),
             "objective.losses.1.name: the name 'loss_mse' is already used");
  EXPECT_HAS(test::config_error_of(
                 [&] { ObjectiveModule(model, objective("{losses: [{type: mse, wieght: 1}]}")); }),
             "did you mean 'objective.losses.0.weight'");
  EXPECT_HAS(test::config_error_of(
                 [&] { ObjectiveModule(model, objective("{losses: [{type: mse, weight: -1}]}")); }),
             "objective.losses.0.weight");
  EXPECT_HAS(test::config_error_of(
                 [&] { ObjectiveModule(model, objective("{losses: [{prediction: logits}]}")); }),
             "objective.losses.0.type");
  EXPECT_HAS(test::config_error_of([&] {
               ObjectiveModule(model,
                               objective("{losses: [{type: mse}], regularizers: [{type: l2}]}"));
             }),
             "objective.regularizers.0.weight");
}

TEST(ObjectiveModuleTest, MissingBatchKeyListsBatchKeys) {
  ObjectiveModule module(std::make_shared<TwoHeads>(),
                         objective("{inputs: [features], predictions: [logits, value], "
                                   "losses: [{type: cross_entropy}]}"));
  std::string msg = test::config_error_of([&] { module.training_step(batch()); });
  EXPECT_HAS(msg, "objective.inputs: the batch has no tensor 'features'; batch keys: x, y, v");

  ObjectiveModule target(std::make_shared<TwoHeads>(),
                         objective("{predictions: [logits, value], "
                                   "losses: [{type: cross_entropy, target: label}]}"));
  msg = test::config_error_of([&] { target.training_step(batch()); });
  EXPECT_HAS(msg,
             "objective.losses.0.target: the batch has no tensor 'label'; batch keys: x, y, v");
}

TEST(ObjectiveModuleTest, OutputCountMustMatchPredictions) {
  ObjectiveModule module(std::make_shared<TwoHeads>(),
                         objective("{losses: [{type: cross_entropy}]}"));
  std::string msg = test::config_error_of([&] { module.training_step(batch()); });
  EXPECT_HAS(msg, "returned 2 output(s) but objective.predictions lists 1 (logits)");
}

TEST(ObjectiveModuleTest, NamedModelOutputsAreMatchedByName) {
  auto model = std::make_shared<TwoHeads>(std::vector<std::string>{"value", "logits"});
  ObjectiveModule module(model, objective("{losses: [{type: cross_entropy}]}"));
  Batch b = batch();
  double ce = torch::nn::functional::cross_entropy(model->cls->forward(b.at("x")), b.at("y"))
                  .item<double>();
  EXPECT_NEAR(module.training_step(b).loss.item<double>(), ce, 1e-5);

  ObjectiveModule missing(model, objective("{predictions: [probs], losses: [{type: mse}]}"));
  EXPECT_HAS(test::config_error_of([&] { missing.training_step(b); }),
             "has no output 'probs'; its outputs are: value, logits");
}

TEST(ObjectiveModuleTest, BuildsTheModelFromTheRegistry) {
  static std::once_flag once;
  std::call_once(once, [] {
    model_registry().add("test_two_heads", "test model", Schema(),
                         [](const Config&) -> ModelPtr { return std::make_shared<TwoHeads>(); });
  });
  ObjectiveModule module(Config::from_string("{type: test_two_heads}", "model"),
                         objective(kTwoLosses));
  EXPECT_EQ(module.parameters().size(), 4u);
  EXPECT_TRUE(module.named_parameters().contains("model.cls.weight"));
  EXPECT_TRUE(module.training_step(batch()).loss.defined());
  EXPECT_HAS(test::config_error_of([&] {
               ObjectiveModule(Config::from_string("{type: test_two_head}", "model"),
                               objective(kTwoLosses));
             }),
             "did you mean 'test_two_heads'");
}

TEST(ObjectiveModuleTest, AcceptsAnAlreadyResolvedSection) {
  Config once = objective_section_schema()->resolve(objective(kTwoLosses));
  Config twice = objective_section_schema()->resolve(once);
  EXPECT_EQ(once.dump(), twice.dump());
  EXPECT_EQ(once.get_string_list("inputs"), std::vector<std::string>{"x"});
  EXPECT_EQ(once.list("losses")[0].get_string("target"), "y");
  EXPECT_TRUE(ObjectiveModule(std::make_shared<TwoHeads>(), once)
                  .training_step(batch())
                  .metrics.count("loss_mse"));
}

TEST(ObjectiveModuleTest, SchemaDocumentsEveryKey) {
  std::string md = objective_section_schema()->markdown("objective");
  for (const char* key : {"objective.inputs", "objective.predictions", "objective.losses[].type",
                          "objective.losses[].weight", "objective.regularizers[].include_bias",
                          "objective.metrics[].name"}) {
    EXPECT_HAS(md, std::string("`") + key + "`");
  }
}

}  // namespace
}  // namespace unitrain
