#include "unitrain/checkpoint/checkpoint_options.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <limits>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;

const double kNaN = std::nan("");
const double kInf = std::numeric_limits<double>::infinity();

/// A module that logs `wer` (lower is better) and `acc` (higher), and `f1` without a direction.
struct DeclaringModule : TrainModule {
  StepOutput training_step(const Batch&) override { return {}; }
  StepOutput validation_step(const Batch&) override { return {}; }
  std::optional<MetricDirection> metric_direction(const std::string& name) const override {
    if (name == "wer") return MetricDirection::LowerIsBetter;
    if (name == "acc") return MetricDirection::HigherIsBetter;
    return TrainModule::metric_direction(name);
  }
};

/// The `checkpoint` section given as YAML, resolved against the schema.
CheckpointOptions parse(const std::string& yaml) {
  return CheckpointOptions::from_config(
      CheckpointOptions::schema()->resolve(Config(YAML::Load(yaml), "checkpoint")));
}

EarlyStoppingOptions parse_early(const std::string& yaml) {
  return EarlyStoppingOptions::from_config(
      EarlyStoppingOptions::schema()->resolve(Config(YAML::Load(yaml), "early_stopping")));
}

TEST(CheckpointOptions, SchemaDefaults) {
  const CheckpointOptions o = parse("{}");
  EXPECT_TRUE(o.enabled);
  ASSERT_TRUE(o.every.has_value());
  EXPECT_EQ(o.every->unit, TrainUnit::Unit::Epochs);
  EXPECT_EQ(o.every->count, 1);
  EXPECT_EQ(o.keep_last, 3);
  EXPECT_TRUE(o.final);
  EXPECT_EQ(o.best_metric, "");
  EXPECT_EQ(o.best_mode, MetricMode::Auto);
  EXPECT_FALSE(o.best_direction.has_value());
  EXPECT_FALSE(o.best_threshold.has_value());
  EXPECT_EQ(o.resume, "auto");
  EXPECT_FALSE(o.async);
  EXPECT_EQ(o.on_signal, (std::vector<std::string>{"SIGTERM", "SIGUSR1"}));
  EXPECT_EQ(o.on_signal_numbers(), (std::vector<int>{SIGTERM, SIGUSR1}));
  EXPECT_EQ(o.on_signal_exit_code, 75);

  // The struct's own defaults agree with the schema's.
  const CheckpointOptions d;
  EXPECT_EQ(d.enabled, o.enabled);
  ASSERT_TRUE(d.every.has_value());
  EXPECT_EQ(d.every->unit, o.every->unit);
  EXPECT_EQ(d.every->count, o.every->count);
  EXPECT_EQ(d.keep_last, o.keep_last);
  EXPECT_EQ(d.final, o.final);
  EXPECT_EQ(d.best_metric, o.best_metric);
  EXPECT_EQ(d.best_mode, o.best_mode);
  EXPECT_EQ(d.best_threshold, o.best_threshold);
  EXPECT_EQ(d.resume, o.resume);
  EXPECT_EQ(d.async, o.async);
  EXPECT_EQ(d.on_signal, o.on_signal);
  EXPECT_EQ(d.on_signal_exit_code, o.on_signal_exit_code);

  // Every key is declared with help text (what `unitrain config --help` prints).
  for (const auto& field : CheckpointOptions::schema()->fields()) {
    EXPECT_FALSE(field.help_text().empty()) << field.name();
  }
  const Field* best = CheckpointOptions::schema()->find("best");
  ASSERT_NE(best, nullptr);
  ASSERT_NE(best->section_schema(), nullptr);
  ASSERT_NE(best->section_schema()->find("mode"), nullptr);
  EXPECT_EQ(best->section_schema()->find("mode")->default_yaml(),
            std::optional<std::string>("auto"));
  // One declaration for both monitors' mode key.
  const Field* early_mode = EarlyStoppingOptions::schema()->find("mode");
  ASSERT_NE(early_mode, nullptr);
  EXPECT_EQ(early_mode->help_text(), best->section_schema()->find("mode")->help_text());
  EXPECT_EQ(early_mode->default_yaml(), std::optional<std::string>("auto"));
}

TEST(CheckpointOptions, ParsesEveryKey) {
  const CheckpointOptions o = parse(
      "{enabled: false, every: 500 samples, keep_last: 0, final: false, async: true,"
      " resume: best, best: {metric: val/acc, threshold: 0.9}}");
  EXPECT_FALSE(o.enabled);
  ASSERT_TRUE(o.every.has_value());
  EXPECT_EQ(o.every->unit, TrainUnit::Unit::Samples);
  EXPECT_EQ(o.every->count, 500);
  EXPECT_EQ(o.keep_last, 0);
  EXPECT_FALSE(o.final);
  EXPECT_TRUE(o.async);
  EXPECT_EQ(o.resume, "best");
  EXPECT_EQ(o.best_metric, "val/acc");
  EXPECT_EQ(o.best_mode, MetricMode::Auto);  // resolved against the module at the start
  ASSERT_TRUE(o.best_threshold.has_value());
  EXPECT_DOUBLE_EQ(*o.best_threshold, 0.9);

  EXPECT_FALSE(parse("{every: null}").every.has_value());
  EXPECT_EQ(parse("{every: 200 steps}").every->unit, TrainUnit::Unit::Steps);
  EXPECT_EQ(parse("{resume: /runs/a/checkpoints/step-10}").resume, "/runs/a/checkpoints/step-10");
  EXPECT_EQ(parse("{best: {metric: val/loss, mode: min}}").best_direction,
            MetricDirection::LowerIsBetter);
  EXPECT_EQ(parse("{best: {metric: val/loss, mode: max}}").best_direction,
            MetricDirection::HigherIsBetter);
  const CheckpointOptions signals = parse("{on_signal: {signals: [USR2, SIGXCPU], exit_code: 99}}");
  EXPECT_EQ(signals.on_signal_numbers(), (std::vector<int>{SIGUSR2, SIGXCPU}));
  EXPECT_EQ(signals.on_signal_exit_code, 99);
  EXPECT_TRUE(parse("{on_signal: {signals: []}}").on_signal_numbers().empty());
}

TEST(CheckpointOptions, BadValuesAreConfigErrorsNamingTheKey) {
  EXPECT_TRUE(
      contains(error_of<ConfigError>([] { parse("{keep_last: -1}"); }), "checkpoint.keep_last"));
  EXPECT_TRUE(
      contains(error_of<ConfigError>([] { parse("{best: {mode: up}}"); }), "checkpoint.best.mode"));
  std::string m = error_of<ConfigError>([] { parse("{best: {threshold: 0.5}}"); });
  EXPECT_TRUE(contains(m, "checkpoint.best.threshold")) << m;
  EXPECT_TRUE(contains(m, "checkpoint.best.metric")) << m;
  m = error_of<ConfigError>([] { parse("{best: {metric: acc}}"); });
  EXPECT_TRUE(contains(m, "checkpoint.best.metric")) << m;
  EXPECT_TRUE(contains(m, "'acc'")) << m;
  m = error_of<ConfigError>([] { parse("{every: 0 steps}"); });
  EXPECT_TRUE(contains(m, "checkpoint.every")) << m;
  m = error_of<ConfigError>([] { parse("{resume: ''}"); });
  EXPECT_TRUE(contains(m, "checkpoint.resume")) << m;
  m = error_of<ConfigError>([] { parse("{on_signal: {signals: [SIGTERM, SIGUSR3]}}"); });
  EXPECT_TRUE(contains(m, "checkpoint.on_signal.signals")) << m;
  EXPECT_TRUE(contains(m, "'SIGUSR3'")) << m;
  EXPECT_TRUE(contains(m, "SIGUSR1")) << m;  // the known names
  m = error_of<ConfigError>([] { parse("{on_signal: {signals: [SIGINT]}}"); });
  EXPECT_TRUE(contains(m, "'SIGINT'")) << m;
  m = error_of<ConfigError>([] { parse("{on_signal: {exit_code: 0}}"); });
  EXPECT_TRUE(contains(m, "checkpoint.on_signal.exit_code")) << m;
}

/// The section, its best.mode resolved against DeclaringModule as fit() does.
CheckpointOptions resolved(const std::string& yaml) {
  CheckpointOptions o = parse(yaml);
  o.resolve_best_direction(DeclaringModule());
  return o;
}

TEST(CheckpointOptions, ImprovesForMinMode) {
  const CheckpointOptions o = resolved("{best: {metric: val/loss}}");
  ASSERT_EQ(o.best_direction, MetricDirection::LowerIsBetter);
  EXPECT_TRUE(o.improves(0.5, kNaN));  // anything finite beats no best yet
  EXPECT_TRUE(o.improves(0.4, 0.5));
  EXPECT_TRUE(o.improves(-1.0, 0.5));
  EXPECT_FALSE(o.improves(0.5, 0.5));  // equal is not better
  EXPECT_FALSE(o.improves(0.6, 0.5));
  EXPECT_FALSE(o.improves(kNaN, 0.5));
  EXPECT_FALSE(o.improves(kNaN, kNaN));
  EXPECT_FALSE(o.improves(-kInf, 0.5));  // a diverged value is never the best
  EXPECT_FALSE(o.improves(kInf, kNaN));
}

TEST(CheckpointOptions, ImprovesForMaxMode) {
  const CheckpointOptions o = resolved("{best: {metric: val/acc}}");
  ASSERT_EQ(o.best_direction, MetricDirection::HigherIsBetter);
  EXPECT_TRUE(o.improves(0.1, kNaN));
  EXPECT_TRUE(o.improves(0.6, 0.5));
  EXPECT_FALSE(o.improves(0.5, 0.5));
  EXPECT_FALSE(o.improves(0.4, 0.5));
  EXPECT_FALSE(o.improves(kInf, 0.5));
  EXPECT_FALSE(o.improves(kNaN, 0.5));
}

TEST(CheckpointOptions, ImprovesHonoursTheThreshold) {
  const CheckpointOptions max = parse("{best: {metric: val/acc, mode: max, threshold: 0.8}}");
  EXPECT_FALSE(max.improves(0.7, kNaN));  // better than nothing, not than the threshold
  EXPECT_FALSE(max.improves(0.8, kNaN));  // the threshold itself is not beyond it
  EXPECT_TRUE(max.improves(0.85, kNaN));
  EXPECT_TRUE(max.improves(0.9, 0.85));
  EXPECT_FALSE(max.improves(0.84, 0.85));
  EXPECT_FALSE(max.improves(0.75, 0.7));  // better than the best, not than the threshold

  const CheckpointOptions min = resolved("{best: {metric: val/loss, threshold: 0.3}}");
  EXPECT_FALSE(min.improves(0.4, kNaN));
  EXPECT_TRUE(min.improves(0.2, kNaN));
  EXPECT_TRUE(min.improves(0.1, 0.2));
  EXPECT_FALSE(min.improves(0.25, 0.2));
  EXPECT_FALSE(min.improves(0.35, 0.5));
}

TEST(CheckpointOptions, AutoModeFollowsTheDirectionTheModuleDeclares) {
  // A lower-is-better metric whose name says nothing of it: the lowest value is the best.
  const CheckpointOptions wer = resolved("{best: {metric: val/wer}}");
  ASSERT_EQ(wer.best_direction, MetricDirection::LowerIsBetter);
  double best = kNaN;
  for (double v : {0.4, 0.3, 0.35, 0.2, 0.25}) {
    if (wer.improves(v, best)) best = v;
  }
  EXPECT_EQ(best, 0.2);
  // The split goes; loss is lower-is-better in any module; an explicit mode wins.
  EXPECT_EQ(resolved("{best: {metric: train/loss}}").best_direction,
            MetricDirection::LowerIsBetter);
  EXPECT_EQ(resolved("{best: {metric: val/wer, mode: max}}").best_direction,
            MetricDirection::HigherIsBetter);
  EXPECT_EQ(resolved("{best: {metric: val/f1, mode: min}}").best_direction,
            MetricDirection::LowerIsBetter);
  // No best metric: nothing to resolve.
  EXPECT_FALSE(resolved("{}").best_direction.has_value());
}

TEST(CheckpointOptions, AutoModeOnAMetricWithoutADirectionIsAConfigErrorNamingTheKey) {
  const std::string m = error_of<ConfigError>([] { resolved("{best: {metric: val/f1}}"); });
  EXPECT_EQ(m,
            "checkpoint.best.metric: val/f1 has no declared direction (neither its metric's "
            "registration nor the module says whether a higher or a lower 'f1' is better); set "
            "checkpoint.best.mode: min or max");
  // Not resolved at all: improves() refuses to guess.
  EXPECT_FALSE(
      error_of<TrainError>([] { parse("{best: {metric: val/f1}}").improves(1, 2); }).empty());
}

TEST(CheckpointOptions, AMetricOneEditFromADeclaredOneIsATypoWithASuggestion) {
  const DeclaringModule module;
  for (const char* typo : {"val/accc", "val/ac", "val/cac", "val/wre"}) {
    const std::string m = error_of<ConfigError>([&] {
      monitored_direction(MetricMode::Auto, typo, module, "checkpoint.best.metric", "m");
    });
    EXPECT_TRUE(contains(m, std::string("checkpoint.best.metric: ") + typo +
                                " is not a metric the module declares; did you mean val/"))
        << m;
  }
  EXPECT_TRUE(contains(error_of<ConfigError>([&] {
                         monitored_direction(MetricMode::Auto, "val/accc", module, "k", "m");
                       }),
                       "did you mean val/acc?"));
  // Short names one letter apart are often two metrics: no guess; an explicit mode is taken.
  EXPECT_TRUE(contains(error_of<ConfigError>([&] {
                         monitored_direction(MetricMode::Auto, "val/cer", module, "k", "m");
                       }),
                       "val/cer has no declared direction"));
  EXPECT_EQ(monitored_direction(MetricMode::Min, "val/cer", module, "k", "m"),
            MetricDirection::LowerIsBetter);
  // A mode given does not make a typo of a declared name a metric of its own (issue 48).
  EXPECT_TRUE(contains(error_of<ConfigError>([&] {
                         monitored_direction(MetricMode::Max, "val/accc", module, "k", "m");
                       }),
                       "did you mean val/acc?"));
}

TEST(CheckpointOptions, MonitoredDirectionStripsOnlyTheSplit) {
  const DeclaringModule module;
  EXPECT_EQ(monitored_direction(MetricMode::Auto, "val/wer", module, "k", "m"),
            MetricDirection::LowerIsBetter);
  EXPECT_EQ(monitored_direction(MetricMode::Auto, "acc", module, "k", "m"),
            MetricDirection::HigherIsBetter);
  EXPECT_TRUE(contains(error_of<ConfigError>([&] {
                         monitored_direction(MetricMode::Auto, "val/x/wer", module, "k", "m");
                       }),
                       "'x/wer'"));
}

TEST(CheckpointEarlyStoppingOptions, SchemaDefaults) {
  const EarlyStoppingOptions off = parse_early("{}");
  EXPECT_EQ(off.metric, "");  // off
  EXPECT_EQ(off.patience, 5);
  EXPECT_DOUBLE_EQ(off.min_delta, 0.0);
  const EarlyStoppingOptions d;
  EXPECT_EQ(d.metric, off.metric);
  EXPECT_EQ(d.patience, off.patience);
  EXPECT_EQ(d.min_delta, off.min_delta);
}

TEST(CheckpointEarlyStoppingOptions, ParsesEveryKey) {
  const EarlyStoppingOptions on = parse_early("{metric: val/acc, patience: 2, min_delta: 0.01}");
  EXPECT_EQ(on.metric, "val/acc");
  EXPECT_EQ(on.mode, MetricMode::Auto);  // EarlyStopping resolves it when the run starts
  EXPECT_EQ(on.patience, 2);
  EXPECT_DOUBLE_EQ(on.min_delta, 0.01);
  EXPECT_EQ(parse_early("{metric: val/perplexity, mode: min}").mode, MetricMode::Min);
  EXPECT_EQ(parse_early("{metric: val/perplexity, mode: max}").mode, MetricMode::Max);
  EXPECT_TRUE(contains(error_of<ConfigError>([] { parse_early("{patience: 0}"); }),
                       "early_stopping.patience"));
  EXPECT_TRUE(contains(error_of<ConfigError>([] { parse_early("{min_delta: -0.1}"); }),
                       "early_stopping.min_delta"));
  EXPECT_TRUE(
      contains(error_of<ConfigError>([] { parse_early("{mode: lower}"); }), "early_stopping.mode"));
}

}  // namespace
}  // namespace unitrain
