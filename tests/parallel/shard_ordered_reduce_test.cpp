// distributed.reproducible's reduction: with G = 12 shards whose gradients and values depend on
// (seed, shard) alone, the summed gradient (added at once or in halves around the exchange), the
// per-shard sums and an AdamW step on owned slices are bitwise the same on 1, 2, 3 and 4 ranks,
// and equal to one thread accumulating the 12 shards in order; the norm by parameter blocks is
// the same whole or in parts.
#include "unitrain/parallel/shard_ordered_reduce.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <tuple>

#include "parallel/run_ranks.h"
#include "unitrain/optim/fused_adam.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

constexpr int kOrderedShards = 12;
constexpr int64_t kOrderedNumel = 10007;  // not a multiple of 12 x 64: the last chunk is padded

/// Shard `shard`'s flat gradient at step `seed`, the same wherever it runs: magnitudes spread
/// over many octaves, so that another order of additions rounds differently.
torch::Tensor shard_gradient_of(int64_t seed, int shard, c10::ScalarType dtype) {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(seed * 1000 + shard));
  torch::Tensor g =
      torch::randn({kOrderedNumel}, gen) * torch::exp(3 * torch::randn({kOrderedNumel}, gen));
  return g.to(dtype);
}

/// Shard `shard`'s logged values (a loss, a metric's sum), spread over many octaves.
std::vector<double> shard_values_of(int shard) {
  std::mt19937_64 gen(static_cast<uint64_t>(7000 + shard));
  std::normal_distribution<double> normal;
  return {std::exp(8 * normal(gen)), normal(gen) * 1e-3};
}

/// One thread: shards 0..G-1 in order, the first copied and the others added (autograd's
/// accumulation of G micro-batches), padded with zeros as the layout pads.
torch::Tensor sequential_gradient(int64_t seed, c10::ScalarType dtype, int64_t padded) {
  torch::Tensor sum = torch::zeros({padded}, dtype);
  torch::Tensor head = sum.narrow(0, 0, kOrderedNumel);
  head.copy_(shard_gradient_of(seed, 0, dtype));
  for (int s = 1; s < kOrderedShards; ++s) head.add_(shard_gradient_of(seed, s, dtype));
  return sum;
}

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.numel() == b.numel() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), size_t(a.numel()) * a.element_size()) == 0;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// What a run on `world` ranks produced: the gradient assembled from every rank's owned slice,
/// what each rank computed, and each rank's parameters after two AdamW steps.
struct OrderedRun {
  torch::Tensor gradient;
  std::vector<torch::Tensor> params;
  std::vector<std::vector<double>> value_sums;
};

/// Two steps (seeds 1, then 2: the second's first add() starts over); the second is kept.
OrderedRun run_ordered(int world, c10::ScalarType dtype) {
  const int64_t padded = MicroShardLayout(kOrderedNumel, kOrderedShards, world, 0).padded_numel();
  OrderedRun out;
  out.gradient = torch::zeros({padded}, dtype);
  out.value_sums.resize(size_t(world));
  out.params.resize(size_t(world));
  const torch::Tensor start = torch::randn({padded}, at::detail::createCPUGenerator(99));
  test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    const MicroShardLayout layout(kOrderedNumel, kOrderedShards, world, rank);
    ShardOrderedReduce reduce(group, layout, dtype);
    std::vector<std::vector<double>> values;
    for (int64_t seed : {1, 2}) {
      values.clear();
      for (int i = 0; i < layout.micro_steps(); ++i) {
        const torch::Tensor g = shard_gradient_of(seed, layout.shard_at(i, rank), dtype);
        if (i % 2) {  // in halves (the exchange in flight between them), or at once
          reduce.start(g);
          EXPECT_TRUE(reduce.in_flight());
          reduce.finish_add();
        } else {
          reduce.add(g);
        }
        EXPECT_EQ(reduce.micro_steps_done(), i + 1);
        values.push_back(shard_values_of(layout.shard_at(i, rank)));
      }
      ASSERT_TRUE(reduce.complete());
    }
    const int64_t at = layout.owned_offset(), n = layout.owned_numel();
    out.gradient.narrow(0, at, n).copy_(reduce.owned_gradient());
    out.value_sums[size_t(rank)] = sum_in_shard_order(group.get(), layout, values);
    // AdamW on the owned slice (float32 masters), then every slice to every rank.
    torch::Tensor flat = start.clone();
    torch::Tensor mine = flat.narrow(0, at, n).clone().requires_grad_();
    mine.mutable_grad() = reduce.owned_gradient().to(torch::kFloat32);
    FusedAdamW adamw({mine}, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    for (int step = 0; step < 2; ++step) adamw.step();
    flat.narrow(0, at, n).copy_(mine.detach());
    gather_owned(*group, layout, flat);
    out.params[size_t(rank)] = flat;
  });
  return out;
}

void expect_world_size_independent(c10::ScalarType dtype) {
  const OrderedRun one = run_ordered(1, dtype);
  const torch::Tensor reference = sequential_gradient(2, dtype, one.gradient.numel());
  EXPECT_TRUE(torch::equal(one.gradient, reference));
  EXPECT_TRUE(same_bytes(one.gradient, reference));
  // The data can tell orders apart: DDP's on 2 ranks (each rank's shards, then the two sums).
  torch::Tensor even = reference.clone().zero_(), odd = even.clone();
  for (int s = 0; s < kOrderedShards; ++s) {
    (s % 2 ? odd : even).narrow(0, 0, kOrderedNumel).add_(shard_gradient_of(2, s, dtype));
  }
  EXPECT_FALSE(torch::equal(even + odd, reference)) << "the test's data hides the order";
  // The per-shard values, added in shard order by one thread.
  std::vector<double> sums = shard_values_of(0);
  for (int s = 1; s < kOrderedShards; ++s) {
    for (size_t j = 0; j < sums.size(); ++j) sums[j] += shard_values_of(s)[j];
  }
  ASSERT_EQ(one.value_sums[0].size(), sums.size());
  for (size_t j = 0; j < sums.size(); ++j) EXPECT_TRUE(same_bits(one.value_sums[0][j], sums[j]));

  for (int world : {2, 3, 4}) {
    const OrderedRun run = run_ordered(world, dtype);
    EXPECT_TRUE(torch::equal(run.gradient, reference)) << world;
    EXPECT_TRUE(same_bytes(run.gradient, reference)) << world;
    for (int r = 0; r < world; ++r) {
      EXPECT_TRUE(same_bytes(run.params[size_t(r)], one.params[0])) << world << " " << r;
      for (size_t j = 0; j < sums.size(); ++j) {
        EXPECT_TRUE(same_bits(run.value_sums[size_t(r)][j], sums[j])) << world << " " << r;
      }
    }
  }
}

TEST(ShardOrderedReduce, Float32GradientAndSumsAreBitwiseTheSameOnOneToFourRanks) {
  expect_world_size_independent(torch::kFloat32);
}

TEST(ShardOrderedReduce, Bfloat16GradientAndSumsAreBitwiseTheSameOnOneToFourRanks) {
  expect_world_size_independent(torch::kBFloat16);
}

TEST(ShardOrderedReduce, ParametersGatheredFromOwnedSlicesAreTheSameOnEveryRank) {
  test::run_ranks(3, [](int rank, ProcessGroup& g) {
    const MicroShardLayout layout(1000, 6, 3, rank);
    torch::Tensor flat = torch::full({layout.padded_numel()}, -1.0f);
    flat.narrow(0, layout.owned_offset(), layout.owned_numel()).fill_(float(rank));
    gather_owned(g, layout, flat);
    for (int r = 0; r < 3; ++r) {
      EXPECT_TRUE(torch::equal(flat.narrow(0, layout.owned_offset(r), layout.owned_numel()),
                               torch::full({layout.owned_numel()}, float(r))));
    }
  });
}

// Not a timed assertion: what a micro-step sends and how long it takes here, for a 1M-parameter
// float32 gradient, beside the all-reduce (DDP) and the reduce-scatter (ZeRO) of the same buffer.
TEST(ShardOrderedReduceCost, BytesAndTimePerMicroStepForOneMillionParameters) {
  for (int world : {2, 4}) {
    test::run_shared_ranks(world, [world](int rank, const std::shared_ptr<ProcessGroup>& group) {
      const MicroShardLayout layout(1000000, 12, world, rank);
      ShardOrderedReduce reduce(group, layout, torch::kFloat32);
      const int64_t padded = layout.padded_numel();
      EXPECT_EQ(reduce.bytes_sent_per_micro_step(), (world - 1) * padded / world * 4);
      const torch::Tensor g = torch::randn({padded});
      reduce.add(g);  // warm-up: connections, buffers
      const int64_t before = group->flight().count();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 1; i < layout.micro_steps(); ++i) reduce.add(g);
      const double per_step =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
          (layout.micro_steps() - 1);
      EXPECT_EQ(group->flight().count() - before, layout.micro_steps() - 1);  // one each
      std::vector<torch::Tensor> whole{g.clone()};
      t0 = std::chrono::steady_clock::now();
      group->all_reduce_sum(whole);
      const double all_reduce =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      torch::Tensor full = g.clone(), part = torch::empty({padded / world});
      t0 = std::chrono::steady_clock::now();
      group->reduce_scatter_sum(part, full);
      const double reduce_scatter =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (rank == 0) {
        std::cout << "W=" << world << " P=" << padded << ": micro-step sends "
                  << reduce.bytes_sent_per_micro_step() << " B (ring all-reduce "
                  << 2 * (world - 1) * padded / world * 4 << " B, reduce-scatter "
                  << (world - 1) * padded / world * 4 << " B); times here (threads over loopback"
                  << ", shared cores): micro-step " << per_step << " ms, all_reduce " << all_reduce
                  << " ms, reduce_scatter_sum " << reduce_scatter << " ms\n";
      }
    });
  }
}

}  // namespace
}  // namespace unitrain

namespace unitrain {
namespace {

TEST(ParameterBlockSquares, TheNormIsTheSameWholeOrInPartsOnAnyRanks) {
  // Three parameters (100, 64 and 7 elements, magnitudes over many octaves): whole on one rank,
  // or their 64-element blocks spread over 3 ranks as ZeRO 3's parts spread them.
  const std::vector<int64_t> numels{100, 64, 7};
  std::vector<torch::Tensor> grads;
  auto gen = at::detail::createCPUGenerator(3);
  for (int64_t n : numels) {
    grads.push_back(torch::randn({n}, gen) * torch::exp(4 * torch::randn({n}, gen)));
  }
  double expected = 0;  // by hand: each block's squares in order, the blocks in order
  for (const auto& g : grads) {
    for (int64_t b = 0; b * 64 < g.numel(); ++b) {
      double block = 0;
      for (int64_t i = b * 64; i < std::min(g.numel(), (b + 1) * 64); ++i) {
        const double v = g[i].item<float>();
        block += v * v;
      }
      expected += block;
    }
  }
  ParameterBlockSquares whole(numels);
  for (size_t p = 0; p < grads.size(); ++p) whole.add(p, 0, grads[p]);
  const double alone = whole.norm(nullptr);
  EXPECT_EQ(alone, std::sqrt(expected));
  // Blocks by owner: (param 0, block 0) rank 2, (0, 1) rank 0, (1, 0) rank 1, (2, 0) rank 0.
  const std::vector<std::tuple<size_t, int64_t, int>> owners{
      {0, 0, 2}, {0, 64, 0}, {1, 0, 1}, {2, 0, 0}};
  std::vector<double> norms(3);
  test::run_shared_ranks(3, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    ParameterBlockSquares parts(numels);
    for (const auto& [p, first, owner] : owners) {
      if (owner != rank) continue;
      const int64_t n = std::min<int64_t>(64, numels[p] - first);
      parts.add(p, first, grads[p].narrow(0, first, n));
    }
    norms[size_t(rank)] = parts.norm(group.get());
  });
  for (double n : norms) EXPECT_TRUE(same_bits(n, alone));
}

}  // namespace
}  // namespace unitrain
