#include "unitrain/engine/callbacks/early_stopping.h"

#include <gtest/gtest.h>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

EarlyStoppingOptions watch_loss(int64_t patience) {
  EarlyStoppingOptions o;
  o.metric = "val/loss";
  o.mode = MetricMode::Min;
  o.patience = patience;
  return o;
}

EarlyStoppingOptions watch(const std::string& metric, int64_t patience) {
  EarlyStoppingOptions o;
  o.metric = metric;  // mode: auto
  o.patience = patience;
  return o;
}

/// A module that logs `wer` (lower is better) and `f1` without a direction.
struct WerModule : test::Regression {
  std::optional<MetricDirection> metric_direction(const std::string& name) const override {
    if (name == "wer") return MetricDirection::LowerIsBetter;
    return TrainModule::metric_direction(name);
  }
};

TEST(EarlyStopping, StopsAfterPatienceValidationsWithoutImprovement) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping early(watch_loss(2));
  for (double v : {1.0, 0.5, 0.6}) early.on_validation_end(trainer, {{"val/loss", v}});
  EXPECT_FALSE(trainer.stop_decided());
  early.on_validation_end(trainer, {{"val/loss", 0.7}});
  EXPECT_TRUE(trainer.stop_decided());
  EXPECT_EQ(early.best(), 0.5);
  EXPECT_EQ(early.stalls(), 2);
}

TEST(EarlyStopping, ItsStateRoundTripsThroughACheckpointEntry) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping a(watch_loss(5));
  for (double v : {0.3, 0.4}) a.on_validation_end(trainer, {{"val/loss", v}});
  CheckpointEntries entries;
  a.on_save_checkpoint(trainer, entries);
  EarlyStopping b(watch_loss(5));
  b.on_load_checkpoint(trainer, entries);
  EXPECT_EQ(b.best(), 0.3);
  EXPECT_EQ(b.stalls(), 1);
  EarlyStopping other(watch_loss(5));  // no entry (or another metric's): starts afresh
  other.on_load_checkpoint(trainer, {});
  EXPECT_TRUE(std::isnan(other.best()));
}

TEST(EarlyStopping, AutoModeStopsOnTheSideTheModuleDeclares) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping early(watch("val/wer", 2));
  early.resolve_direction(WerModule());
  // A falling error rate improves: no stop, the lowest is the best.
  for (double v : {0.5, 0.4, 0.3, 0.2}) early.on_validation_end(trainer, {{"val/wer", v}});
  EXPECT_FALSE(trainer.stop_decided());
  EXPECT_EQ(early.best(), 0.2);
  EXPECT_EQ(early.stalls(), 0);
  for (double v : {0.25, 0.3}) early.on_validation_end(trainer, {{"val/wer", v}});
  EXPECT_TRUE(trainer.stop_decided());
  EXPECT_EQ(early.best(), 0.2);
}

TEST(EarlyStopping, AutoModeOnAMetricWithoutADirectionIsAConfigError) {
  EarlyStopping early(watch("val/f1", 2));
  const std::string m = test::error_of<ConfigError>([&] { early.resolve_direction(WerModule()); });
  EXPECT_NE(m.find("early_stopping.metric: val/f1 has no declared direction"), std::string::npos)
      << m;
  EXPECT_NE(m.find("set early_stopping.mode: min or max"), std::string::npos) << m;
  // Outside fit() there is no module to ask: auto is an error there too, a set mode is not.
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping loose(watch("val/loss", 1));
  EXPECT_NE(test::error_of<ConfigError>([&] {
              loose.on_validation_end(trainer, {{"val/loss", 1}});
            }).find("early_stopping.mode"),
            std::string::npos);
}

TEST(EarlyStopping, AMissingMetricNamesWhatValidationReports) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping early(watch_loss(1));
  EXPECT_EQ(test::error_of<ConfigError>([&] {
              early.on_validation_end(trainer, {{"val/acc", 1}, {"val/mae", 2}});
            }),
            "early_stopping.metric monitors 'val/loss' but validation reports: val/acc, val/mae");
}

}  // namespace
}  // namespace unitrain
