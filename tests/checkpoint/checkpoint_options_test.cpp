#include "unitrain/checkpoint/checkpoint_options.h"

#include <gtest/gtest.h>

#include <cmath>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

CheckpointOptions parse(const std::string& yaml) {
  return CheckpointOptions::from_config(
      CheckpointOptions::schema()->resolve(Config::from_string(yaml)));
}

TEST(CheckpointOptions, Defaults) {
  CheckpointOptions o = parse("{}");
  EXPECT_TRUE(o.enabled);
  ASSERT_TRUE(o.every.has_value());
  EXPECT_EQ(o.every->unit, TrainUnit::Unit::Epochs);
  EXPECT_EQ(o.every->count, 1);
  EXPECT_EQ(o.keep_last, 3);
  EXPECT_TRUE(o.final);
  EXPECT_EQ(o.best_metric, "");
  EXPECT_FALSE(o.best_threshold.has_value());
  EXPECT_EQ(o.resume, "auto");
  EXPECT_FALSE(o.async);
}

TEST(CheckpointOptions, ParsesEveryKey) {
  CheckpointOptions o = parse(
      "{every: 500 samples, keep_last: 0, final: false, async: true, resume: best,"
      " best: {metric: val/acc, threshold: 0.9}}");
  EXPECT_EQ(o.every->unit, TrainUnit::Unit::Samples);
  EXPECT_EQ(o.every->count, 500);
  EXPECT_EQ(o.keep_last, 0);
  EXPECT_FALSE(o.final);
  EXPECT_TRUE(o.async);
  EXPECT_EQ(o.resume, "best");
  EXPECT_EQ(o.best_metric, "val/acc");
  EXPECT_EQ(o.best_mode, MetricMode::Max);  // auto: accuracy grows
  EXPECT_DOUBLE_EQ(*o.best_threshold, 0.9);
  EXPECT_FALSE(parse("{every: null}").every.has_value());
  EXPECT_THROW(parse("{keep_last: -1}"), ConfigError);
  EXPECT_THROW(parse("{best: {mode: up}}"), ConfigError);
}

TEST(CheckpointOptions, ImprovesHonoursModeAndThreshold) {
  CheckpointOptions o = parse("{best: {metric: val/loss}}");
  EXPECT_EQ(o.best_mode, MetricMode::Min);
  EXPECT_TRUE(o.improves(0.5, std::nan("")));
  EXPECT_TRUE(o.improves(0.4, 0.5));
  EXPECT_FALSE(o.improves(0.5, 0.5));
  EXPECT_FALSE(o.improves(0.6, 0.5));
  EXPECT_FALSE(o.improves(std::nan(""), 0.5));

  CheckpointOptions t = parse("{best: {metric: val/acc, mode: max, threshold: 0.8}}");
  EXPECT_FALSE(t.improves(0.7, std::nan("")));  // better than nothing, not than the threshold
  EXPECT_TRUE(t.improves(0.85, std::nan("")));
  EXPECT_FALSE(t.improves(0.84, 0.85));
}

TEST(CheckpointOptions, AutoModeFollowsTheMetricName) {
  for (const char* m : {"val/loss", "val/loss_cross_entropy", "val/perplexity", "val/mse", "val/mae"}) {
    EXPECT_EQ(resolve_metric_mode("auto", m), MetricMode::Min) << m;
  }
  for (const char* m : {"val/acc", "val/top3", "val/f1"}) {
    EXPECT_EQ(resolve_metric_mode("auto", m), MetricMode::Max) << m;
  }
  EXPECT_EQ(resolve_metric_mode("max", "val/loss"), MetricMode::Max);
  EXPECT_EQ(resolve_metric_mode("min", "val/acc"), MetricMode::Min);
}

TEST(EarlyStoppingOptions, DefaultsAndParse) {
  auto resolve = [](const std::string& yaml) {
    return EarlyStoppingOptions::from_config(
        EarlyStoppingOptions::schema()->resolve(Config::from_string(yaml)));
  };
  EarlyStoppingOptions off = resolve("{}");
  EXPECT_EQ(off.metric, "");
  EXPECT_EQ(off.patience, 5);
  EXPECT_DOUBLE_EQ(off.min_delta, 0.0);
  EarlyStoppingOptions on = resolve("{metric: val/acc, patience: 2, min_delta: 0.01}");
  EXPECT_EQ(on.metric, "val/acc");
  EXPECT_EQ(on.mode, MetricMode::Max);
  EXPECT_EQ(on.patience, 2);
  EXPECT_THROW(resolve("{patience: 0}"), ConfigError);
}

}  // namespace
}  // namespace unitrain
