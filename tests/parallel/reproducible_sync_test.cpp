// distributed.reproducible's gradient sync: the gradients a step ends with are bitwise the same
// on 1, 2, 3 and 4 ranks, and equal to one process accumulating the G shards' backwards; a
// parameter no shard used gets none; the step's decision is every rank's.
#include "unitrain/parallel/reproducible_sync.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>

#include "parallel/run_ranks.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

constexpr int kSyncShards = 12;

/// The same parameters on every rank: a weight, a bias, and one no shard uses.
std::vector<torch::Tensor> sync_params() {
  auto gen = at::detail::createCPUGenerator(5);
  return {torch::randn({7, 33}, gen).requires_grad_(), torch::randn({7}, gen).requires_grad_(),
          torch::randn({4}, gen).requires_grad_(),
          torch::randn({3}, gen)};  // (frozen: not laid out)
}

/// Shard `shard`'s loss x 1/G, the same wherever it runs: inputs spread over many octaves.
torch::Tensor shard_loss(const std::vector<torch::Tensor>& p, int shard) {
  auto gen = at::detail::createCPUGenerator(100 + uint64_t(shard));
  torch::Tensor x = torch::randn({5, 33}, gen) * torch::exp(3 * torch::randn({5, 1}, gen));
  torch::Tensor y = torch::nn::functional::linear(x, p[0], p[1]);
  return (y.tanh().square().sum() + y.sum() * 1e-3) * (1.0 / kSyncShards);
}

struct Grads {
  std::vector<torch::Tensor> grads;
  StepDecision agreed;
};

/// One step of G shards on `world` ranks (threads); rank 0's gradients after finish().
Grads sync_step(int world) {
  Grads out;
  test::run_shared_ranks(world, [&](int rank, const std::shared_ptr<ProcessGroup>& group) {
    std::vector<torch::Tensor> params = sync_params();
    ReproducibleSync sync(world == 1 ? nullptr : group, params, kSyncShards);
    const int steps = kSyncShards / world;
    for (int step = 0; step < 2; ++step) {  // the second starts over from the first's end
      for (int i = 0; i < steps; ++i) {
        const bool last = i + 1 == steps;
        if (last) {
          StepDecision mine;
          mine.stop = rank == world - 1 && step == 1;
          sync.share(mine);
        }
        sync.before_backward(last);
        shard_loss(params, i * world + rank).backward();
        sync.after_backward();
      }
      sync.finish(params);
    }
    if (rank == 0) {
      for (const auto& p : params)
        out.grads.push_back(p.grad().defined() ? p.grad().clone() : p.grad());
      out.agreed = sync.agreed();
    }
  });
  return out;
}

bool grads_equal(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), size_t(a.numel()) * a.element_size()) == 0;
}

TEST(ReproducibleSync, EveryWorldSizeEndsWithOneProcessAccumulationsBits) {
  // One process accumulating the 12 shards' backwards into the gradients (autograd adds).
  std::vector<torch::Tensor> alone = sync_params();
  for (int s = 0; s < kSyncShards; ++s) shard_loss(alone, s).backward();
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    const Grads got = sync_step(world);
    ASSERT_EQ(got.grads.size(), 4u);
    EXPECT_TRUE(grads_equal(got.grads[0], alone[0].grad()));
    EXPECT_TRUE(grads_equal(got.grads[1], alone[1].grad()));
    EXPECT_FALSE(got.grads[2].defined());  // no shard used it: none, as in one process
    EXPECT_FALSE(got.grads[3].defined());
    EXPECT_TRUE(got.agreed.stop);  // the last rank's stop is every rank's
    EXPECT_FALSE(got.agreed.nonfinite);
  }
  // Another order of the same additions differs (the check above can fail).
  std::vector<torch::Tensor> reversed = sync_params();
  for (int s = kSyncShards - 1; s >= 0; --s) shard_loss(reversed, s).backward();
  EXPECT_FALSE(grads_equal(reversed[0].grad(), alone[0].grad()));
}

TEST(ReproducibleSync, AWorldSizeNotDividingTheShardsIsNamed) {
  test::run_shared_ranks(5, [&](int, const std::shared_ptr<ProcessGroup>& group) {
    try {
      ReproducibleSync sync(group, sync_params(), kSyncShards);
      ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("5 processes do not divide the 12 micro-shards"),
                std::string::npos)
          << e.what();
    }
  });
}

TEST(ReproducibleSync, ParametersOfTwoDtypesAreNamed) {
  std::vector<torch::Tensor> params{torch::zeros({3}).requires_grad_(),
                                    torch::zeros({3}, torch::kFloat64).requires_grad_()};
  EXPECT_THROW(ReproducibleSync(nullptr, params, 4), ConfigError);
}

}  // namespace
}  // namespace unitrain
