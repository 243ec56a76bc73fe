// plan_world_change: a checkpoint of W processes continues on W' with the same global batch and
// the same samples in every step.
#include "unitrain/engine/setup/world_change.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace unitrain {
namespace {

SavedLayout layout(int world, int64_t batch, int64_t accumulation, int64_t batch_in_epoch,
                   int64_t micro_in_window = 0) {
  SavedLayout s;
  s.world = world;
  s.batch_size = batch;
  s.accumulation = accumulation;
  s.batch_in_epoch = batch_in_epoch;
  s.micro_in_window = micro_in_window;
  return s;
}

TEST(WorldChange, TheSameWorldAndLayoutChangeNothing) {
  const WorldChange c = plan_world_change(layout(2, 32, 1, 7, 0), 2, 32, "ckpt");
  EXPECT_FALSE(c.changes());
  EXPECT_EQ(c.batch_in_epoch, 7);
  // Saved inside a window: fine as long as nothing changes.
  EXPECT_EQ(plan_world_change(layout(1, 16, 4, 6, 2), 1, 16, "ckpt").batch_in_epoch, 6);
}

TEST(WorldChange, TheAccumulationTakesUpTheGlobalBatch) {
  // 2 x 32 x 1 = 64 per step: one process accumulates 2 micro-batches of 32.
  WorldChange c = plan_world_change(layout(2, 32, 1, 10), 1, 32, "ckpt");
  EXPECT_EQ(c.batch_size, 32);
  EXPECT_EQ(c.accumulation, 2);
  EXPECT_EQ(c.batch_in_epoch, 20);  // sample 640 of the epoch, in micro-batches of 32
  EXPECT_EQ(c.describe(), "train.accumulation_steps 1 -> 2");
  // 1 x 16 x 6 = 96: 3 processes accumulate 2.
  c = plan_world_change(layout(1, 16, 6, 12), 3, 16, "ckpt");
  EXPECT_EQ(c.accumulation, 2);
  EXPECT_EQ(c.batch_in_epoch, 4);
}

TEST(WorldChange, ThePerProcessBatchWhenTheAccumulationCannot) {
  // 1 x 16 x 6 = 96 over 4 processes: 96 / (4 x 16) does not divide, 96 / (4 x 6) = 4 does.
  const WorldChange c = plan_world_change(layout(1, 16, 6, 12), 4, 16, "ckpt");
  EXPECT_EQ(c.batch_size, 4);
  EXPECT_EQ(c.accumulation, 6);
  EXPECT_EQ(c.batch_in_epoch, 12);
  EXPECT_EQ(c.describe(), "data.loader.batch_size 16 -> 4");
  // Resumed again on 4 with the config's batch 16: the same layout, nothing changes.
  EXPECT_FALSE(plan_world_change(layout(4, 4, 6, 18), 4, 16, "ckpt").changes());
}

TEST(WorldChange, AGlobalBatchThatCannotBeSplitIsAClearError) {
  const std::string m = test::config_error_of(
      [] { plan_world_change(layout(2, 32, 1, 0), 3, 32, "runs/x/checkpoints/step-10"); });
  EXPECT_TRUE(test::contains(m,
                             "cannot resume from runs/x/checkpoints/step-10 on 3 process(es): "
                             "its global batch of 64 samples per step"))
      << m;
  EXPECT_TRUE(test::contains(m, "resume on 1, 2, 4, 8, 16, 32, 64 process(es)")) << m;
}

TEST(WorldChange, ACheckpointInsideAWindowKeepsItsLayout) {
  const std::string m =
      test::config_error_of([] { plan_world_change(layout(1, 16, 4, 6, 2), 2, 16, "ckpt"); });
  EXPECT_TRUE(test::contains(m, "saved inside an accumulation window")) << m;
}

TEST(WorldChange, APositionBetweenTheNewMicroBatchesIsRefused) {
  // Stopped after 3 micro-batches of 2 x 16 = 96 samples; 96 is not a multiple of 1 x 64.
  const std::string m =
      test::config_error_of([] { plan_world_change(layout(2, 16, 4, 3), 1, 64, "ckpt"); });
  EXPECT_TRUE(test::contains(m, "stopped at sample 96 of its epoch")) << m;
}

}  // namespace
}  // namespace unitrain
