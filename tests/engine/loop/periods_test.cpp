#include "unitrain/engine/loop/periods.h"

#include <gtest/gtest.h>

namespace unitrain {
namespace {

TrainState at(int64_t epoch, int64_t step, int64_t samples) {
  TrainState s;
  s.epoch = epoch;
  s.step = step;
  s.samples = samples;
  return s;
}

TEST(Periods, StepPeriodsAreDueAtMultiplesOnce) {
  Periods p(TrainUnit::steps(3), TrainUnit::epochs(1), std::nullopt);
  p.start_at(at(0, 0, 0));
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= 10; ++step) {
    if (p.due(Periods::Log, at(0, step, step * 8))) due.push_back(step);
    EXPECT_FALSE(p.due(Periods::Log, at(0, step, step * 8))) << "asked twice at " << step;
  }
  EXPECT_EQ(due, (std::vector<int64_t>{3, 6, 9}));
}

/// The steps (1..steps) at which a log period is due when asked once per step of `per_step`
/// samples.
std::vector<int64_t> due_steps(TrainUnit every, int64_t steps, int64_t per_step) {
  Periods p(every, TrainUnit::epochs(1), std::nullopt);
  p.start_at(at(0, 0, 0));
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= steps; ++step) {
    if (p.due(Periods::Log, at(0, step, step * per_step))) due.push_back(step);
  }
  return due;
}

TEST(Periods, SamplePeriodsCrossedInsideAWindowAreDueAtItsEnd) {
  // Windows of 2 micro-batches of 8: the period ends inside windows; it is asked only at window
  // ends (every 16 samples) and still fires once per crossing. 12 samples: 16 crosses 12, 32
  // crosses 24, 48 crosses 36 (and reaches 48), ... every window.
  EXPECT_EQ(due_steps(TrainUnit::samples(12), 6, 16), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  // 40 samples: 48 crosses 40, 80 reaches 80.
  EXPECT_EQ(due_steps(TrainUnit::samples(40), 6, 16), (std::vector<int64_t>{3, 5}));
}

TEST(Periods, EpochPeriodsAreDueOnlyWhenAnEpochEnds) {
  Periods p(TrainUnit::steps(100), TrainUnit::epochs(2), std::nullopt);
  p.start_at(at(0, 0, 0));
  EXPECT_FALSE(p.due(Periods::Validate, at(0, 5, 40)));
  EXPECT_FALSE(p.due(Periods::Validate, at(1, 10, 80)));
  EXPECT_FALSE(p.due(Periods::Validate, at(1, 15, 120)));
  EXPECT_TRUE(p.due(Periods::Validate, at(2, 20, 160)));
}

TEST(Periods, ANullSavePeriodIsNeverDueAndEventsCountSeparately) {
  Periods p(TrainUnit::steps(1), TrainUnit::steps(2), std::nullopt);
  p.start_at(at(0, 0, 0));
  EXPECT_FALSE(p.due(Periods::Save, at(0, 1, 1)));
  EXPECT_TRUE(p.due(Periods::Log, at(0, 1, 1)));
  EXPECT_FALSE(p.due(Periods::Validate, at(0, 1, 1)));
  EXPECT_TRUE(p.due(Periods::Validate, at(0, 2, 2)));
}

TEST(Periods, AResumeCountsFromTheCheckpoint) {
  Periods p(TrainUnit::steps(5), TrainUnit::epochs(1), TrainUnit::steps(5));
  p.start_at(at(0, 7, 56));
  EXPECT_FALSE(p.due(Periods::Save, at(0, 8, 64)));
  EXPECT_FALSE(p.due(Periods::Save, at(0, 9, 72)));
  EXPECT_TRUE(p.due(Periods::Save, at(0, 10, 80)));
}

TEST(Periods, AFractionOfAnEpochCountsBatches) {
  // 0.5 epochs of 10 batches: due after batches 5 and 10 of each epoch, asked per batch as the
  // loop does (the epoch's last batch before the epoch count moves, then after it).
  Periods p(TrainUnit::steps(100), TrainUnit::parse("0.5 epochs"), std::nullopt);
  p.set_batches_per_epoch(10);
  p.start_at(TrainState{});
  std::vector<std::pair<int64_t, int64_t>> due;  // (epoch, batch)
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    for (int64_t b = 1; b <= 10; ++b) {
      TrainState s;
      s.epoch = epoch;
      s.batch_in_epoch = b;
      if (p.due(Periods::Validate, s)) due.push_back({epoch, b});
    }
    TrainState next;  // end_epoch(): the count moves, the position stays
    next.epoch = epoch + 1;
    EXPECT_FALSE(p.due(Periods::Validate, next));
  }
  EXPECT_EQ(due, (std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {0, 10}, {1, 5}, {1, 10}}));
  // 1.5 epochs is reached half-way through the second epoch.
  TrainState s;
  s.epoch = 1;
  s.batch_in_epoch = 4;
  EXPECT_FALSE(reached(TrainUnit::parse("1.5 epochs"), s, 10));
  s.batch_in_epoch = 5;
  EXPECT_TRUE(reached(TrainUnit::parse("1.5 epochs"), s, 10));
}

TEST(Periods, ReachedMeasuresTheLengthInItsUnit) {
  EXPECT_TRUE(reached(TrainUnit::steps(10), at(0, 10, 0)));
  EXPECT_FALSE(reached(TrainUnit::steps(10), at(5, 9, 1000)));
  EXPECT_TRUE(reached(TrainUnit::epochs(2), at(2, 1, 1)));
  EXPECT_TRUE(reached(TrainUnit::samples(100), at(0, 1, 100)));
  EXPECT_FALSE(reached(TrainUnit::samples(100), at(0, 1, 99)));
}

}  // namespace
}  // namespace unitrain
