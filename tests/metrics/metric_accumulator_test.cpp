// MetricAccumulator: weighted by items, exp for perplexity-like metrics.
#include "unitrain/metrics/metric_accumulator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

torch::Tensor scalar(double x) { return torch::tensor(x, torch::kDouble); }

TEST(MetricAccumulatorTest, WeightsBatchesBySize) {
  MetricAccumulator acc;
  EXPECT_TRUE(acc.empty());
  // A batch of 3 all right, then a short last batch of 1 all wrong: 3/4, not 1/2.
  acc.add({{"acc", MetricValue(scalar(1.0))}, {"loss", MetricValue(scalar(2.0))}}, 3);
  acc.add({{"acc", MetricValue(scalar(0.0))}, {"loss", MetricValue(scalar(6.0))}}, 1);
  auto r = acc.result();
  EXPECT_DOUBLE_EQ(r.at("acc"), 0.75);
  EXPECT_DOUBLE_EQ(r.at("loss"), (2.0 * 3 + 6.0) / 4);
  EXPECT_DOUBLE_EQ(acc.sums().at("loss").weight, 4);
  acc.clear();
  EXPECT_TRUE(acc.result().empty());
}

TEST(MetricAccumulatorTest, ExplicitWeightsOverrideBatchSize) {
  MetricAccumulator acc;
  acc.add("tok_acc", MetricValue(scalar(0.5), 10), 2);  // 10 tokens in a batch of 2
  acc.add("tok_acc", MetricValue(scalar(1.0), 30), 2);
  EXPECT_DOUBLE_EQ(acc.result().at("tok_acc"), (5.0 + 30.0) / 40.0);
}

TEST(MetricAccumulatorTest, ExpOfMean) {
  MetricAccumulator acc;
  acc.add("ppl", MetricValue(scalar(1.0), 1, true), 8);
  acc.add("ppl", MetricValue(scalar(2.0), 3, true), 8);
  EXPECT_NEAR(acc.result().at("ppl"), std::exp((1.0 + 6.0) / 4.0), 1e-12);
  EXPECT_TRUE(acc.sums().at("ppl").exp_of_mean);
  EXPECT_THROW(acc.add("ppl", MetricValue(scalar(2.0), 3, false), 8), TrainError);
}

TEST(MetricAccumulatorTest, ZeroWeightAddsNothingAndEmptyHasNoValue) {
  MetricAccumulator acc;
  acc.add("acc", MetricValue(scalar(0.0), 0), 4);  // e.g. every token ignored
  EXPECT_TRUE(acc.result().empty());
  acc.add("acc", MetricValue(scalar(0.25), 4), 4);
  EXPECT_DOUBLE_EQ(acc.result().at("acc"), 0.25);
}

TEST(MetricAccumulatorTest, RejectsNonScalars) {
  MetricAccumulator acc;
  EXPECT_THROW(acc.add("m", MetricValue(torch::ones({2})), 2), TrainError);
  EXPECT_THROW(acc.add("m", MetricValue(), 2), TrainError);
}

TEST(MetricAccumulatorTest, DeferredReadsGiveTheSameBitsAsReadingEachValue) {
  // Values summed on their device and read once equal values read as added, bit for bit: also
  // when the sums continue from restored ones and host values come in between.
  torch::manual_seed(3);
  torch::Tensor losses = torch::rand({50}) * 7;  // float32, as losses are
  MetricAccumulator now, later(MetricAccumulator::Reads::Deferred);
  for (MetricAccumulator* acc : {&now, &later}) {
    acc->sums()["loss"].weighted = 0.1;  // restored from a checkpoint
    acc->sums()["loss"].weight = 3;
    for (int64_t i = 0; i < 50; ++i) {
      acc->add("loss", MetricValue(losses[i]), 1 + i % 3);
      acc->add("acc", MetricValue(losses[i] / 7, 2.5), 8);
      if (i == 20) acc->add("loss", 0.3, 2.0);
    }
  }
  EXPECT_EQ(now.sums().at("loss").weight, later.sums().at("loss").weight);
  EXPECT_EQ(now.result().at("loss"), later.result().at("loss"));  // exactly
  EXPECT_EQ(now.result().at("acc"), later.result().at("acc"));
  // Read once, the sums stay: another read gives the same, clear() empties.
  EXPECT_EQ(later.result().at("loss"), now.result().at("loss"));
  later.add("loss", MetricValue(losses[0]), 1);
  later.clear();
  EXPECT_TRUE(later.empty());
  EXPECT_TRUE(later.result().empty());
}

}  // namespace
}  // namespace unitrain
