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
  o.patience = patience;
  return o;
}

TEST(EarlyStopping, StopsAfterPatienceValidationsWithoutImprovement) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping early(watch_loss(2));
  for (double v : {1.0, 0.5, 0.6}) early.on_validation_end(trainer, {{"val/loss", v}});
  EXPECT_FALSE(trainer.state().should_stop);
  early.on_validation_end(trainer, {{"val/loss", 0.7}});
  EXPECT_TRUE(trainer.state().should_stop);
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

TEST(EarlyStopping, AMissingMetricNamesWhatValidationReports) {
  Trainer trainer(test::base_config(test::temp_dir() + "/a"));
  EarlyStopping early(watch_loss(1));
  EXPECT_EQ(test::error_of<ConfigError>(
                [&] { early.on_validation_end(trainer, {{"val/acc", 1}, {"val/mae", 2}}); }),
            "early_stopping.metric monitors 'val/loss' but validation reports: val/acc, val/mae");
}

}  // namespace
}  // namespace unitrain
