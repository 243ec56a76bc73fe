// distributed.reproducible's logged sums: every rank's batches added in the global order of the
// batches give the same doubles on 1, 2, 3 and 4 ranks as one process adding them in order.
#include "unitrain/parallel/shard_ordered_metrics.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <random>

#include "parallel/run_ranks.h"
#include "unitrain/metrics/metric_accumulator.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

constexpr int kOrderedBatches = 12;

/// Global batch `k`'s values: a loss over many octaves, a perplexity-like metric, a count.
std::map<std::string, MetricValue> batch_values(int k) {
  std::mt19937_64 gen(uint64_t(300 + k));
  std::normal_distribution<double> normal;
  return {{"loss", MetricValue(std::exp(8 * normal(gen)), double(k % 5))},
          {"ppl", MetricValue(torch::tensor(normal(gen), torch::kFloat64), -1, true)}};
}

bool bits_equal(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(ShardOrderedMetrics, EveryWorldSizeAddsInTheOrderOfTheBatches) {
  // One process, in order, continuing from a restored sum.
  MetricAccumulator alone;
  alone.sums()["loss"].weighted = 0.1;
  for (int k = 0; k < kOrderedBatches; ++k) {
    for (const auto& [name, v] : batch_values(k)) {
      const double w = v.weight < 0 ? 3.0 : v.weight;
      auto& s = alone.sums()[name];
      s.exp_of_mean = v.exp_of_mean;
      if (w == 0) continue;
      s.weight += w;
      s.weighted += v.value.item<double>() * w;
    }
  }
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
      ShardOrderedMetrics ordered;
      for (int k = rank; k < kOrderedBatches; k += world) ordered.add(batch_values(k), 3);
      MetricAccumulator sums;
      sums.sums()["loss"].weighted = 0.1;
      ordered.fold(world == 1 ? nullptr : group.get(), sums);
      EXPECT_TRUE(ordered.empty());
      for (const char* name : {"loss", "ppl"}) {
        EXPECT_TRUE(bits_equal(sums.sums().at(name).weighted, alone.sums().at(name).weighted))
            << name;
        EXPECT_EQ(sums.sums().at(name).weight, alone.sums().at(name).weight) << name;
      }
      EXPECT_TRUE(sums.sums().at("ppl").exp_of_mean);
    });
  }
}

TEST(ShardOrderedMetrics, RanksWithOneBatchFewerStillAddInOrder) {
  // 7 validation batches on 3 ranks: 3, 2, 2.
  MetricAccumulator alone;
  for (int k = 0; k < 7; ++k) {
    auto& s = alone.sums()["x"];
    s.weight += 2;
    s.weighted += std::exp(double(k * 7 % 11)) * 2;
  }
  test::run_shared_ranks(3, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    ShardOrderedMetrics ordered;
    for (int k = rank; k < 7; k += 3) {
      ordered.add({{"x", MetricValue(std::exp(double(k * 7 % 11)))}}, 2);
    }
    MetricAccumulator sums;
    ordered.fold(group.get(), sums);
    EXPECT_TRUE(bits_equal(sums.sums().at("x").weighted, alone.sums().at("x").weighted));
  });
}

}  // namespace
}  // namespace unitrain
