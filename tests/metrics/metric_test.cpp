// The metric functions on hand-made tensors.
#include "unitrain/metrics/metric.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/core/error.h"
#include "unitrain/metrics/metric_accumulator.h"

namespace unitrain {
namespace {

double v(const MetricValue& m) { return m.value.item<double>(); }

TEST(MetricTest, AccuracyOnClassScores) {
  torch::Tensor logits = torch::tensor({{0.1f, 0.9f, 0.0f},    // 1
                                        {2.0f, 0.5f, 0.1f},    // 0
                                        {0.0f, 0.0f, 3.0f},    // 2
                                        {1.0f, 2.0f, 0.0f}});  // 1
  MetricValue m = metrics::accuracy(logits, torch::tensor({1, 0, 2, 2}));
  EXPECT_DOUBLE_EQ(v(m), 0.75);
  EXPECT_EQ(m.weight, 4);
  EXPECT_FALSE(m.exp_of_mean);
  // [B, 1] class-index targets and whole-number float targets are accepted.
  EXPECT_DOUBLE_EQ(v(metrics::accuracy(logits, torch::tensor({{1}, {0}, {2}, {1}}))), 1.0);
  EXPECT_DOUBLE_EQ(v(metrics::accuracy(logits, torch::tensor({1.0f, 1.0f, 1.0f, 1.0f}))), 0.5);
}

TEST(MetricTest, TokenAccuracySkipsIgnoredTokens) {
  // [B=2, T=3, C=2]; argmax per token: [[1, 0, 1], [0, 0, 1]]
  torch::Tensor logits =
      torch::tensor({{{0.f, 1.f}, {1.f, 0.f}, {0.f, 1.f}}, {{1.f, 0.f}, {1.f, 0.f}, {0.f, 1.f}}});
  torch::Tensor target = torch::tensor({{1, 1, -100}, {0, -100, 0}});
  MetricValue m = metrics::accuracy(logits, target);
  EXPECT_EQ(m.weight, 4);  // four counted tokens
  EXPECT_DOUBLE_EQ(v(m), 2.0 / 4.0);
}

TEST(MetricTest, BinaryAccuracyOnOneLogit) {
  torch::Tensor logits = torch::tensor({{2.0f}, {-1.0f}, {0.5f}, {-0.2f}, {3.0f}});
  MetricValue m = metrics::accuracy(logits, torch::tensor({1.0f, 0.0f, 0.0f, 0.0f, 1.0f}));
  EXPECT_DOUBLE_EQ(v(m), 0.8);
  EXPECT_EQ(m.weight, 5);
  EXPECT_DOUBLE_EQ(v(metrics::accuracy(logits.view({5}), torch::tensor({1, 1, 1, 0, 1}))), 0.8);
}

TEST(MetricTest, TopKAccuracy) {
  torch::Tensor logits =
      torch::tensor({{0.5f, 0.3f, 0.2f, 0.0f}, {0.1f, 0.2f, 0.3f, 0.4f}, {0.4f, 0.3f, 0.2f, 0.1f}});
  torch::Tensor target = torch::tensor({1, 1, 3});
  EXPECT_NEAR(v(metrics::top_k_accuracy(logits, target, 1)), 0.0, 1e-12);
  EXPECT_NEAR(v(metrics::top_k_accuracy(logits, target, 2)), 1.0 / 3, 1e-12);
  EXPECT_NEAR(v(metrics::top_k_accuracy(logits, target, 3)), 2.0 / 3, 1e-12);
  EXPECT_NEAR(v(metrics::top_k_accuracy(logits, target, 4)), 1.0, 1e-12);
  try {
    metrics::top_k_accuracy(logits, target, 5);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("number of classes (4)"), std::string::npos) << e.what();
  }
}

TEST(MetricTest, TopKFromRegistryUsesArgs) {
  register_builtin_metrics();
  const auto& info = catalog::find("metric", "top_k_accuracy", "test");
  Config defaults = info.args->resolve(Config());
  EXPECT_EQ(defaults.get_int("k"), 5);
  Config section = Config::from_string("{type: top_k_accuracy, args: {k: 2}}");
  MetricFn fn = metric_registry().create(section);
  torch::Tensor logits = torch::tensor({{0.5f, 0.3f, 0.2f}, {0.1f, 0.2f, 0.3f}});
  EXPECT_DOUBLE_EQ(v(fn(logits, torch::tensor({1, 0}))), 0.5);
  for (const char* name : {"accuracy", "mse", "mae", "perplexity"}) {
    EXPECT_TRUE(catalog::find("metric", name, "test").args->fields().empty()) << name;
  }
}

TEST(MetricTest, EveryBuiltInDeclaresWhetherHigherIsBetter) {
  register_builtin_metrics();
  for (const char* name : {"accuracy", "top_k_accuracy"}) {
    EXPECT_EQ(metric_registry().direction(name), MetricDirection::HigherIsBetter) << name;
  }
  for (const char* name : {"mse", "mae", "perplexity"}) {
    EXPECT_EQ(metric_registry().direction(name), MetricDirection::LowerIsBetter) << name;
  }
  for (const ComponentInfo* info : catalog::of_kind("metric")) {
    if (info->name.rfind("unit_test_", 0) == 0) continue;  // this file's own registrations
    EXPECT_TRUE(metric_registry().direction(info->name).has_value()) << info->name;
  }
  EXPECT_FALSE(metric_registry().direction("no_such_metric").has_value());
}

TEST(MetricTest, AMetricRegisteredInCppDeclaresItsDirectionAsTheBuiltInsDo) {
  auto fn = [](const Config&) { return MetricFn(&metrics::mae); };
  metric_registry().add("unit_test_wer", "word error rate", MetricDirection::LowerIsBetter,
                        Schema(), fn);
  metric_registry().add("unit_test_undeclared", "no direction", Schema(), fn);
  EXPECT_EQ(metric_registry().direction("unit_test_wer"), MetricDirection::LowerIsBetter);
  EXPECT_FALSE(metric_registry().direction("unit_test_undeclared").has_value());
  EXPECT_TRUE(metric_registry().contains("unit_test_wer"));
  EXPECT_TRUE(metric_registry().contains("unit_test_undeclared"));
}

TEST(MetricTest, MseAndMae) {
  torch::Tensor pred = torch::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  torch::Tensor target = torch::tensor({{1.0f, 0.0f}, {0.0f, 4.0f}});
  MetricValue mse = metrics::mse(pred, target);
  EXPECT_NEAR(v(mse), (0 + 4 + 9 + 0) / 4.0, 1e-6);
  EXPECT_EQ(mse.weight, 2);  // rows
  EXPECT_NEAR(v(metrics::mae(pred, target)), (0 + 2 + 3 + 0) / 4.0, 1e-6);
  // [B, 1] vs [B] compares element-wise.
  EXPECT_NEAR(v(metrics::mae(torch::tensor({{1.0f}, {2.0f}}), torch::tensor({0.0f, 0.0f}))), 1.5,
              1e-6);
}

TEST(MetricTest, ShapeMismatchNamesMetricAndShapes) {
  try {
    metrics::mse(torch::zeros({3, 2}), torch::zeros({3}));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "metric 'mse': prediction shape [3, 2] does not fit target shape [3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(metrics::accuracy(torch::zeros({3, 4}), torch::zeros({4}, torch::kLong)),
               ConfigError);
}

TEST(MetricTest, PerplexityIsMeanTokenNllWithExpFlag) {
  torch::Tensor logits = torch::randn({2, 3, 5});
  torch::Tensor target = torch::tensor({{1, 4, -100}, {0, 2, 2}});
  MetricValue m = metrics::perplexity(logits, target);
  EXPECT_TRUE(m.exp_of_mean);
  EXPECT_EQ(m.weight, 5);
  double nll =
      torch::nn::functional::cross_entropy(logits.permute({0, 2, 1}), target).item<double>();
  EXPECT_NEAR(v(m), nll, 1e-5);
}

TEST(MetricTest, PerplexityOverUnequalBatchesIsExpOfOverallMeanNll) {
  torch::manual_seed(3);
  torch::Tensor a = torch::randn({3, 4, 7}), b = torch::randn({1, 4, 7});
  torch::Tensor ya = torch::randint(0, 7, {3, 4}), yb = torch::randint(0, 7, {1, 4});
  ya.index_put_({0, 3}, -100);
  ya.index_put_({2, 0}, -100);
  yb.index_put_({0, 1}, -100);
  MetricAccumulator acc;
  acc.add("ppl", metrics::perplexity(a, ya), 3);
  acc.add("ppl", metrics::perplexity(b, yb), 1);
  torch::Tensor all_logits = torch::cat({a, b}).reshape({-1, 7});
  torch::Tensor all_targets = torch::cat({ya, yb}).reshape({-1});
  double overall = torch::nn::functional::cross_entropy(all_logits, all_targets).item<double>();
  EXPECT_NEAR(acc.result().at("ppl"), std::exp(overall), 1e-4);
  // Not the mean of the two batches' perplexities.
  double naive =
      0.5 * (std::exp(v(metrics::perplexity(a, ya))) + std::exp(v(metrics::perplexity(b, yb))));
  EXPECT_GT(std::abs(acc.result().at("ppl") - naive), 1e-3);
}

}  // namespace
}  // namespace unitrain
