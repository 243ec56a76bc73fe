// The `train` section on its own: its defaults, what it refuses (naming the key), and what it
// derives — the accumulation a global batch implies, rollbacks, when losses are read.
#include "unitrain/engine/config/train_options.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

TrainOptions train(const std::string& yaml) {
  return TrainOptions::from_config(Config::from_string("train: " + yaml).at("train"));
}

TEST(TrainOptions, DefaultsAreTheFieldsOwn) {
  const TrainOptions t = train("{}");
  EXPECT_EQ(t.max_length.str(), TrainUnit::epochs(10).str());
  EXPECT_EQ(t.accumulation_steps, 1);
  EXPECT_FALSE(t.global_batch_size.has_value());
  EXPECT_EQ(t.clip_grad_norm, 0);
  EXPECT_EQ(t.device, "auto");
  EXPECT_EQ(t.on_nonfinite, OnNonFinite::Stop);
  EXPECT_EQ(t.precision, PrecisionMode::Fp32);
  EXPECT_EQ(t.watchdog.stall_timeout, 1800);
  EXPECT_EQ(t.watchdog.action, StallAction::Abort);
  EXPECT_EQ(t.log_every.str(), TrainUnit::steps(10).str());
}

TEST(TrainOptions, ReadsItsKeysAndSections) {
  const TrainOptions t = train(
      "{max_length: 3 steps, accumulation_steps: 2, on_nonfinite: skip, precision: bf16-mixed,"
      " watchdog: {stall_timeout: 60, action: warn}, loss_reads: deferred}");
  EXPECT_EQ(t.max_length.str(), TrainUnit::steps(3).str());
  EXPECT_EQ(t.accumulation_steps, 2);
  EXPECT_EQ(t.on_nonfinite, OnNonFinite::Skip);
  EXPECT_EQ(t.precision, PrecisionMode::Bf16Mixed);
  EXPECT_EQ(t.watchdog.stall_timeout, 60);
  EXPECT_EQ(t.watchdog.action, StallAction::Warn);
  EXPECT_EQ(t.loss_reads, LossReads::Deferred);
}

TEST(TrainOptions, BadValuesAreRefusedNamingTheKey) {
  std::string m = test::message_of([] { train("{max_length: 0 steps}"); });
  EXPECT_TRUE(test::contains(m, "train.max_length must be more than 0")) << m;
  m = test::message_of([] { train("{log_every: 0 steps}"); });
  EXPECT_TRUE(test::contains(m, "train.log_every")) << m;
  m = test::message_of([] { train("{accumulation_steps: 0}"); });
  EXPECT_TRUE(test::contains(m, "train.accumulation_steps")) << m;
  m = test::message_of([] { train("{on_nonfinite: ignore}"); });
  EXPECT_TRUE(test::contains(m, "train.on_nonfinite")) << m;
  EXPECT_TRUE(test::contains(m, "rollback")) << m;  // the choices
  m = test::message_of([] { train("{watchdog: {stall_timeout: -1}}"); });
  EXPECT_TRUE(test::contains(m, "train.watchdog.stall_timeout")) << m;
}

TEST(TrainOptions, AGlobalBatchImpliesTheAccumulation) {
  EXPECT_EQ(train("{accumulation_steps: 3}").resolve_accumulation(8, 2), 3);
  EXPECT_EQ(train("{global_batch_size: 64}").resolve_accumulation(8, 2), 4);
  // Both given and agreeing.
  EXPECT_EQ(train("{global_batch_size: 64, accumulation_steps: 4}").resolve_accumulation(8, 2), 4);
  std::string m =
      test::message_of([] { train("{global_batch_size: 60}").resolve_accumulation(8, 2); });
  EXPECT_TRUE(test::contains(m, "train.global_batch_size 60 is not a multiple of")) << m;
  EXPECT_TRUE(test::contains(m, "8 x 2 = 16")) << m;
  m = test::message_of(
      [] { train("{global_batch_size: 64, accumulation_steps: 2}").resolve_accumulation(8, 2); });
  EXPECT_TRUE(test::contains(m, "give only one of them")) << m;
}

TEST(TrainOptions, RollbacksAndLossReadsFollowTheirKeys) {
  EXPECT_FALSE(train("{}").rolls_back());
  EXPECT_TRUE(train("{on_nonfinite: rollback}").rolls_back());
  EXPECT_TRUE(train("{divergence: {spike_factor: 3, action: rollback}}").rolls_back());
  EXPECT_FALSE(train("{}").defers_reads(false));
  EXPECT_TRUE(train("{}").defers_reads(true));  // auto: deferred on accelerators
  EXPECT_FALSE(train("{loss_reads: immediate}").defers_reads(true));
  EXPECT_TRUE(train("{loss_reads: deferred}").defers_reads(false));
}

}  // namespace
}  // namespace unitrain
