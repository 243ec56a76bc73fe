// ZeRO stage 3's unit runner and the joining of small units: a joined unit is gathered once for
// its members and reduced once after their backwards, with the gradients of separate units.
#include "unitrain/parallel/sharded_unit_runner.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "parallel/run_ranks.h"
#include "unitrain/parallel/shard_module.h"

namespace unitrain {
namespace {

using test::run_ranks;

std::vector<torch::Tensor> sized(std::initializer_list<int64_t> numels) {
  std::vector<torch::Tensor> out;
  for (int64_t n : numels) out.push_back(torch::zeros({n}));
  return out;
}

std::vector<torch::Tensor> unit_test_params_for_prefetch() {
  return {torch::arange(10, torch::kFloat32).sin().requires_grad_(),
          torch::arange(7, torch::kFloat32).cos().requires_grad_()};
}

TEST(JoinSmallUnits, JoinsInOrderUntilEachHoldsTheMinimumAndTheTailJoinsTheOneBefore) {
  const std::vector<std::vector<torch::Tensor>> units{sized({10}), sized({30, 5}), sized({40}),
                                                      sized({8}), sized({4})};
  EXPECT_EQ(join_small_units(units, 0), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(join_small_units(units, 35), (std::vector<int>{0, 0, 1, 1, 1}));  // 45, 40 + 12
  EXPECT_EQ(join_small_units(units, 40), (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(join_small_units(units, 1000), (std::vector<int>{0, 0, 0, 0, 0}));
  EXPECT_EQ(join_small_units(units, 12), (std::vector<int>{0, 0, 1, 2, 2}));
  EXPECT_EQ(join_small_units(units, 9), (std::vector<int>{0, 1, 2, 3, 3}));
  EXPECT_EQ(join_small_units(units, 13), (std::vector<int>{0, 0, 1, 1, 1}));  // 8 + 4: too few
}

/// Two linear maps, one unit each; with `joined` their parameters are one unit of the runner's.
/// Returns this rank's shards' gradients after one forward and backward of rank-dependent data.
std::vector<torch::Tensor> unit_gradients(ProcessGroup& g, int rank, bool joined,
                                          bool prefetch = false) {
  torch::Tensor w1 = torch::arange(12, torch::kFloat32).view({3, 4}).sin().requires_grad_();
  torch::Tensor w2 = torch::arange(8, torch::kFloat32).view({4, 2}).cos().requires_grad_();
  const std::vector<int> group_of = joined ? std::vector<int>{0, 0} : std::vector<int>{0, 1};
  auto params = std::make_shared<ShardedParameters>(
      std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), std::vector<torch::Tensor>{w1, w2},
      group_of, std::vector<int>{0, 0});
  ShardedUnitRunner runner(params, group_of, prefetch);
  const torch::Tensor x = torch::linspace(-1, 1, 6).view({2, 3}) * (rank + 1);
  auto h = runner.run(0,
                      [&](const std::vector<torch::Tensor>& in) {
                        EXPECT_TRUE(params->gathered(group_of[0]));
                        return std::vector<torch::Tensor>{in[0].matmul(w1).tanh()};
                      },
                      {x});
  // A joined unit stays gathered between its members' forwards; a unit of its own does not.
  if (!prefetch) EXPECT_EQ(params->gathered(0), joined);
  auto y = runner.run(
      1,
      [&](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{in[0].matmul(w2)};
      },
      h);
  for (int u = 0; u < params->units(); ++u) EXPECT_FALSE(params->gathered(u));
  y[0].pow(2).sum().backward();
  for (int u = 0; u < params->units(); ++u) EXPECT_FALSE(params->gathered(u));
  // The whole gradients are reduced into the parts and freed.
  EXPECT_FALSE(w1.grad().defined());
  EXPECT_FALSE(w2.grad().defined());
  std::vector<torch::Tensor> out;
  for (const auto& s : params->shards()) out.push_back(s.grad().clone());
  return out;
}

TEST(ShardedUnitRunner, AJoinedUnitReducesTheGradientsOfItsMembersAsSeparateUnitsDo) {
  run_ranks(2, [](int rank, ProcessGroup& g) {
    const auto separate = unit_gradients(g, rank, false);
    const auto joined = unit_gradients(g, rank, true);
    ASSERT_EQ(separate.size(), 2u);
    ASSERT_EQ(joined.size(), 1u);
    // The joined flat is w1 then w2 (20 elements, 10 a rank); separately 6 + 4 a rank.
    const torch::Tensor whole_separate =
        torch::cat({separate[0], separate[1]});  // this rank's parts of each
    const torch::Tensor joined_part = joined[0];
    EXPECT_EQ(joined_part.numel(), 10);
    // Each rank's separate parts: w1 elements [6r, 6r + 6), w2 elements [4r, 4r + 4); gathered
    // and put in order they compare with the joined flat gathered.
    torch::Tensor sep_gathered = torch::empty({20});
    g.all_gather_shards(sep_gathered, whole_separate);
    torch::Tensor joined_gathered = torch::empty({20});
    g.all_gather_shards(joined_gathered, joined_part);
    // sep_gathered: [w1 0..5, w2 0..3, w1 6..11, w2 4..7]; joined: [w1 0..11, w2 0..7].
    const torch::Tensor sep_w1 =
        torch::cat({sep_gathered.narrow(0, 0, 6), sep_gathered.narrow(0, 10, 6)});
    const torch::Tensor sep_w2 =
        torch::cat({sep_gathered.narrow(0, 6, 4), sep_gathered.narrow(0, 16, 4)});
    EXPECT_TRUE(torch::allclose(joined_gathered.narrow(0, 0, 12), sep_w1));
    EXPECT_TRUE(torch::allclose(joined_gathered.narrow(0, 12, 8), sep_w2));
    EXPECT_GT(sep_w1.abs().sum().item<float>(), 0);
  });
}

/// Three units of a chain of maps run forward and backward (`prefetch` or not); checks that at
/// most two units are whole while one runs; returns this rank's shards' gradients.
std::vector<torch::Tensor> chain_gradients(ProcessGroup& g, int rank, bool prefetch) {
  std::vector<torch::Tensor> w;
  for (int i = 0; i < 3; ++i) {
    w.push_back(
        torch::arange(16, torch::kFloat32).view({4, 4}).mul(0.3 + i).sin().requires_grad_());
  }
  auto params =
      std::make_shared<ShardedParameters>(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}),
                                          w, std::vector<int>{0, 1, 2}, std::vector<int>{0, 0, 0});
  ShardedUnitRunner runner(params, {}, prefetch);
  auto whole_units = [&] {
    int n = 0;
    for (int u = 0; u < 3; ++u) n += params->gathered(u);
    return n;
  };
  std::vector<torch::Tensor> h{torch::linspace(-1, 1, 8).view({2, 4}) * (rank + 1)};
  for (size_t u = 0; u < 3; ++u) {
    h = runner.run(
        u,
        [&, u](const std::vector<torch::Tensor>& in) {
          EXPECT_LE(whole_units(), 1);  // the prefetched one is launched, waited for when it runs
          return std::vector<torch::Tensor>{in[0].matmul(w[u]).tanh()};
        },
        h);
  }
  h[0].sum().backward();
  EXPECT_EQ(whole_units(), 0);
  std::vector<torch::Tensor> out;
  for (const auto& s : params->shards()) out.push_back(s.grad().clone());
  // Validation's pass (no gradients) leaves nothing gathered or in flight.
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> v{torch::ones({1, 4})};
    for (size_t u = 0; u < 3; ++u) {
      v = runner.run(
          u,
          [&, u](const std::vector<torch::Tensor>& in) {
            return std::vector<torch::Tensor>{in[0].matmul(w[u])};
          },
          v);
    }
    EXPECT_EQ(whole_units(), 0);
  }
  return out;
}

TEST(ShardedUnitRunner, PrefetchingTheNextUnitGivesTheSameGradientsBitwise) {
  run_ranks(2, [](int rank, ProcessGroup& g) {
    const auto plain = chain_gradients(g, rank, false);
    const auto prefetched = chain_gradients(g, rank, true);
    ASSERT_EQ(plain.size(), prefetched.size());
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(torch::equal(plain[i], prefetched[i]));
    // Joined units prefetch too.
    const auto joined = unit_gradients(g, rank, true, true);
    const auto joined_plain = unit_gradients(g, rank, true, false);
    EXPECT_TRUE(torch::equal(joined[0], joined_plain[0]));
  });
}

TEST(ShardedParameters, APrefetchedUnitIsWholeWhenGatheredAndMayBeReleasedInFlight) {
  run_ranks(3, [](int, ProcessGroup& g) {
    auto params = unit_test_params_for_prefetch();
    std::vector<torch::Tensor> before;
    for (const auto& p : params) before.push_back(p.detach().clone());
    ShardedParameters sharded(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), params,
                              {0, 1}, {0, 0});
    sharded.prefetch(1);
    EXPECT_FALSE(sharded.gathered(1));
    sharded.gather(1);
    EXPECT_TRUE(torch::equal(params[1], before[1]));
    sharded.prefetch(0);
    sharded.release(0);  // waits for the gather, then frees
    EXPECT_EQ(params[0].storage().nbytes(), 0u);
    sharded.prefetch(0);
    sharded.release_all();
    EXPECT_FALSE(sharded.gathered(0));
    EXPECT_FALSE(sharded.gathered(1));
    sharded.gather(0);
    EXPECT_TRUE(torch::equal(params[0], before[0]));
  });
}

}  // namespace
}  // namespace unitrain
