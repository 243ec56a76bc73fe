// DivergenceGuard: the moving mean a spike is measured against, the rollback count and the lr
// scale, and their checkpoint file (a rollback keeps the count and scale, a resume restores
// them); the step decision's loss slot, summed over ranks.
#include "unitrain/engine/step/divergence_guard.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/step_decision.h"

namespace unitrain {
namespace {

DivergenceOptions spikes(double factor, int64_t window) {
  DivergenceOptions o;
  o.spike_factor = factor;
  o.window = window;
  return o;
}

TEST(DivergenceGuard, ASpikeIsAboveTheFactorTimesTheMeanOfAFullWindow) {
  DivergenceGuard g(spikes(3, 4));
  for (double l : {1.0, 2.0, 1.0}) g.record(l);
  EXPECT_EQ(g.spike(100), "");  // 3 of 4 steps: no mean yet
  g.record(2.0);                // mean 1.5
  EXPECT_EQ(g.spike(4.5), "");  // not above 3 x 1.5
  EXPECT_EQ(g.spike(4.6), "loss 4.6 is above 3 x 1.5, the mean of the last 4 steps");
  EXPECT_EQ(g.spike(std::numeric_limits<double>::quiet_NaN()), "");  // on_nonfinite's case
  g.record(5.0);  // the window moves: 2, 1, 2, 5 -> mean 2.5
  EXPECT_EQ(g.spike(7.4), "");
  EXPECT_NE(g.spike(7.6), "");
}

TEST(DivergenceGuard, WithoutASpikeFactorNothingIsASpikeOrRecorded) {
  DivergenceGuard g{DivergenceOptions{}};
  EXPECT_FALSE(g.watches_spikes());
  for (int i = 0; i < 100; ++i) g.record(1.0);
  EXPECT_EQ(g.spike(1e9), "");
  EXPECT_NE(g.to_json().find("\"losses\": []"), std::string::npos) << g.to_json();
}

TEST(DivergenceGuard, RollbacksScaleTheLrAndStopPastTheirMaximum) {
  DivergenceOptions o = spikes(2, 1);
  o.lr_factor = 0.5;
  o.max_rollbacks = 2;
  DivergenceGuard g(o);
  g.begin_rollback("a");
  g.rolled_back();
  g.begin_rollback("b");
  g.rolled_back();
  EXPECT_EQ(g.rollbacks(), 2);
  EXPECT_DOUBLE_EQ(g.lr_scale(), 0.25);
  const std::string error = test::error_of<TrainError>([&] { g.begin_rollback("loss spike"); });
  EXPECT_TRUE(test::contains(error,
                             "loss spike; the run has rolled back 2 time(s), "
                             "train.divergence.max_rollbacks is 2"))
      << error;
}

TEST(DivergenceGuard, ARollbackRestoresTheLossesButKeepsTheCountAndScale) {
  DivergenceOptions o = spikes(2, 2);
  o.lr_factor = 0.1;
  DivergenceGuard saved(o);
  saved.record(1.0);
  saved.record(3.0);
  const std::string file = saved.to_json();

  DivergenceGuard resumed(o);  // a resume takes everything
  resumed.load_json(file, "divergence.json");
  EXPECT_EQ(resumed.to_json(), file);

  DivergenceGuard running(o);  // a rollback: the losses only
  running.record(7.0);
  running.begin_rollback("x");
  running.load_json(file, "divergence.json");
  running.rolled_back();
  EXPECT_EQ(running.rollbacks(), 1);
  EXPECT_DOUBLE_EQ(running.lr_scale(), 0.1);
  EXPECT_EQ(running.spike(4.1), "loss 4.1 is above 2 x 2, the mean of the last 2 steps");

  const std::string bad = test::error_of<TrainError>(
      [&] { resumed.load_json("{\"losses\": 3}", "ckpt/divergence.json"); });
  EXPECT_TRUE(test::contains(bad, "ckpt/divergence.json is not a divergence state file")) << bad;
}

TEST(DivergenceGuard, TheDecisionsLossSlotSumsToTheMeanOverRanks) {
  StepDecision a, b;
  a.loss = 1.5 / 2;  // each rank's mean / ranks
  b.loss = 2.5 / 2;
  std::array<float, StepDecision::kSlots> sum{};
  for (const auto& d : {a, b}) {
    const auto e = d.encode();
    for (int i = 0; i < StepDecision::kSlots; ++i) sum[i] += e[i];
  }
  const StepDecision agreed = StepDecision::decode(sum.data());
  EXPECT_DOUBLE_EQ(agreed.loss, 2.0);
  EXPECT_FALSE(agreed.nonfinite);
  StepDecision huge;  // beyond float's range: still finite, so still a spike
  huge.loss = 1e300;
  EXPECT_EQ(huge.encode()[StepDecision::kSlots - 1], std::numeric_limits<float>::max());
}

}  // namespace
}  // namespace unitrain
