// ZeRO stage 1: a sharded optimizer steps every parameter exactly as the whole optimizer does,
// keeps state for its own partition only, and its ranks' files merge into the whole state.
#include "unitrain/parallel/optimizer_sharding.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <numeric>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/optim/fused_adam.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

using test::run_ranks;

TEST(PartitionBySize, EachParameterGoesToTheLeastLoadedRank) {
  EXPECT_EQ(partition_by_size({100, 10, 10, 50, 60}, 2), (std::vector<int>{0, 1, 1, 1, 1}));
  EXPECT_EQ(partition_by_size({5, 5, 5}, 1), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(partition_by_size({1, 1}, 3), (std::vector<int>{0, 1}));  // rank 2 owns nothing
  // Balanced to within the largest parameter, for a transformer-like list of sizes.
  std::vector<int64_t> sizes;
  for (int layer = 0; layer < 8; ++layer) {
    for (int64_t n :
         {512 * 1536, 1536, 512 * 512, 512, 512, 512, 2048 * 512, 2048, 512 * 2048, 512})
      sizes.push_back(n);
  }
  for (int world : {2, 3, 4}) {
    const std::vector<int> owners = partition_by_size(sizes, world);
    std::vector<int64_t> load(size_t(world), 0);
    for (size_t i = 0; i < sizes.size(); ++i) load[size_t(owners[i])] += sizes[i];
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, 2048 * 512) << world;
  }
}

/// Parameters of several shapes and (`with_double`) a float64 one, the same on every rank (no
/// random numbers: the ranks are threads of one process).
std::vector<torch::Tensor> sharding_test_params(bool with_double = true) {
  std::vector<torch::Tensor> out;
  int64_t k = 1;
  for (auto shape : std::vector<std::vector<int64_t>>{{7, 5}, {5}, {33}, {4, 4, 3}, {1}, {300}}) {
    const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
    out.push_back((torch::arange(n, torch::kFloat32) * 0.37 + double(k++)).sin().view(shape));
  }
  if (with_double) out.push_back(torch::linspace(-1, 1, 9, torch::kFloat64));
  for (auto& p : out) p.requires_grad_();
  return out;
}

/// A deterministic gradient for each parameter at `step`, identical on every rank (as after an
/// all-reduce).
void set_sharding_test_grads(std::vector<torch::Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() = (params[i].detach() * (1.5 + 0.25 * step) + double(i) * 0.01).cos();
  }
}

using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

/// Three steps of the whole optimizer in one process, and of the sharded one over `world`
/// ranks: the same bits in every parameter on every rank; each rank holds state for its own
/// partition only, and the ranks' files together restore the whole optimizer's state.
void expect_sharded_equals_whole(const MakeOptimizer& make, int world, bool with_double = true) {
  auto whole_params = sharding_test_params(with_double);
  auto whole = make(whole_params);
  for (int step = 0; step < 3; ++step) {
    set_sharding_test_grads(whole_params, step);
    whole->step();
  }
  const int64_t whole_bytes = optimizer_state_bytes(*whole);
  std::mutex mu;
  std::vector<OptimizerFile> files(size_t(world), OptimizerFile{});
  int64_t sharded_bytes = 0;
  run_ranks(world, [&](int rank, ProcessGroup& g) {
    auto params = sharding_test_params(with_double);
    auto opt = make(params);
    OptimizerSharding sharding(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), *opt);
    for (int step = 0; step < 3; ++step) {
      set_sharding_test_grads(params, step);
      sharding.step();
      for (const auto& p : params) EXPECT_TRUE(p.grad().defined());  // put back
    }
    size_t owned = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(torch::equal(params[i], whole_params[i])) << "rank " << rank << " param " << i;
      owned += sharding.owners()[i] == rank;
    }
    EXPECT_EQ(opt->state().size(), owned) << rank;
    std::lock_guard<std::mutex> lock(mu);
    sharded_bytes += optimizer_state_bytes(*opt);
    files[size_t(rank)] = {save_optimizer_state(*opt), "rank-" + std::to_string(rank)};
  });
  EXPECT_EQ(sharded_bytes, whole_bytes);
  // Merged into one process: the next step is the whole optimizer's.
  auto params = sharding_test_params(with_double);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(whole_params[i]);
  }
  auto merged = make(params);
  load_optimizer_state(*merged, files);
  set_sharding_test_grads(params, 3);
  merged->step();
  set_sharding_test_grads(whole_params, 3);
  whole->step();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(torch::equal(params[i], whole_params[i])) << i;
}

template <typename Optimizer, typename Options>
MakeOptimizer maker(Options options) {
  return [options](std::vector<torch::Tensor> params) {
    return std::unique_ptr<torch::optim::Optimizer>(new Optimizer(std::move(params), options));
  };
}

TEST(OptimizerSharding, StepsLikeTheWholeOptimizerAndKeepsOnlyItsPartitionsState) {
  register_builtin_optimizers();
  namespace o = torch::optim;
  for (int world : {2, 3}) {
    SCOPED_TRACE(world);
    expect_sharded_equals_whole(maker<o::Adam>(o::AdamOptions(0.01).weight_decay(0.1)), world);
    // (Float32 only: the fused step falls back to LibTorch's for a whole step that meets
    // another dtype, which a partition without the float64 parameter would not.)
    expect_sharded_equals_whole(maker<FusedAdamW>(o::AdamWOptions(0.01)), world, false);
    expect_sharded_equals_whole(maker<o::SGD>(o::SGDOptions(0.1).momentum(0.9).nesterov(true)),
                                world);
    // Adagrad makes state for every parameter when built: the others' is dropped.
    expect_sharded_equals_whole(maker<o::Adagrad>(o::AdagradOptions(0.1)), world);
    expect_sharded_equals_whole(maker<o::RMSprop>(o::RMSpropOptions(0.01).momentum(0.5)), world);
  }
}

TEST(OptimizerSharding, RefusesAnOptimizerWhoseStateCannotBeSavedByParameter) {
  register_builtin_optimizers();
  run_ranks(2, [](int, ProcessGroup& g) {
    auto params = sharding_test_params();
    torch::optim::LBFGS lbfgs(params, torch::optim::LBFGSOptions(1));
    const std::string message = test::message_of(
        [&] { OptimizerSharding(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), lbfgs); });
    EXPECT_TRUE(test::contains(message, "distributed.zero: 1 needs an optimizer")) << message;
  });
}

TEST(ProcessGroup, BroadcastFromEachTensorsOwnRoot) {
  run_ranks(3, [](int rank, ProcessGroup& g) {
    std::vector<torch::Tensor> t{torch::full({2}, double(rank)), torch::full({3}, double(rank)),
                                 torch::full({1}, double(rank), torch::kBFloat16)};
    g.broadcast_from(t, {2, 0, 1});
    EXPECT_TRUE(torch::equal(t[0], torch::full({2}, 2.0)));
    EXPECT_TRUE(torch::equal(t[1], torch::full({3}, 0.0)));
    EXPECT_TRUE(torch::equal(t[2], torch::full({1}, 1.0, torch::kBFloat16)));
  });
}

// NCCL's path (one all-gather per dtype into a buffer of equal chunks), run here on Gloo: each
// rank's owned tensors packed in order, chunks as long as the largest rank's (a rank that owns
// nothing of a dtype sends padding alone), bfloat16 widened on Gloo.
TEST(ProcessGroup, AllGatherFromOwnersGivesEveryTensorItsOwnersValues) {
  const std::vector<int> owners{2, 0, 0, 1, 2, 0, 1};
  auto values = [](int rank) {
    auto v = [rank](std::vector<int64_t> shape, double base, torch::ScalarType dtype) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      return (torch::arange(n, torch::kFloat64) + base + 100.0 * rank).reshape(shape).to(dtype);
    };
    return std::vector<torch::Tensor>{v({2, 3}, 0, torch::kFloat32), v({4}, 10, torch::kFloat32),
                                      v({1}, 20, torch::kFloat64),   v({3, 1}, 30, torch::kFloat32),
                                      v({2}, 40, torch::kBFloat16),  v({5}, 50, torch::kFloat32),
                                      v({2, 2}, 60, torch::kFloat64)};
  };
  run_ranks(3, [&](int rank, ProcessGroup& g) {
    std::vector<torch::Tensor> t = values(rank);
    g.all_gather_from_owners(t, owners);
    std::vector<torch::Tensor> broadcast = values(rank);  // Gloo's own path: the same values
    g.broadcast_from(broadcast, owners);
    for (size_t i = 0; i < t.size(); ++i) {
      const torch::Tensor want = values(owners[i])[i];
      EXPECT_TRUE(torch::equal(t[i], want)) << "rank " << rank << ", tensor " << i;
      EXPECT_TRUE(torch::equal(t[i], broadcast[i])) << "rank " << rank << ", tensor " << i;
      EXPECT_EQ(t[i].scalar_type(), want.scalar_type());
    }
  });
}

TEST(ProcessGroup, FromOwnersOnGlooIsBroadcastFromInPlace) {
  run_ranks(2, [](int rank, ProcessGroup& g) {
    EXPECT_EQ(g.device(), torch::Device(torch::kCPU));
    torch::Tensor a = torch::full({3}, double(rank));
    torch::Tensor b = torch::full({2}, double(rank), torch::kBFloat16);
    std::vector<torch::Tensor> t{a, b};
    g.from_owners(t, {1, 0});
    EXPECT_TRUE(torch::equal(a, torch::full({3}, 1.0)));  // in place
    EXPECT_TRUE(torch::equal(b, torch::full({2}, 0.0, torch::kBFloat16)));
  });
}

TEST(OptimizerStateFiles, PartitionsThatDisagreeAreRefusedNamingTheFile) {
  register_builtin_optimizers();
  auto p = sharding_test_params();
  set_sharding_test_grads(p, 0);
  torch::optim::Adam adam(p, torch::optim::AdamOptions(0.01));
  adam.step();
  torch::optim::SGD sgd(p, torch::optim::SGDOptions(0.01).momentum(0.9));
  sgd.step();
  const std::vector<char> a = save_optimizer_state(adam);
  std::string m = test::message_of([&] {
    load_optimizer_state(adam, {{a, "a.pt"}, {save_optimizer_state(sgd), "b.pt"}});
  });
  EXPECT_TRUE(test::contains(m, "b.pt holds the state of optimizer type 'sgd'")) << m;
  m = test::message_of([&] { load_optimizer_state(adam, {{a, "a.pt"}, {a, "a2.pt"}}); });
  EXPECT_TRUE(test::contains(m, "a2.pt holds parameter 0's state, which an earlier file holds"))
      << m;
  m = test::message_of([&] { load_optimizer_state(adam, {{a, "a.pt"}, {{'x', 'y'}, "c.pt"}}); });
  EXPECT_TRUE(test::contains(m, "c.pt is not an optimizer state file")) << m;
}

}  // namespace
}  // namespace unitrain
