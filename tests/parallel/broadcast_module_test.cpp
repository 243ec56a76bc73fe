// broadcast_module and broadcast_buffers: every rank starts from rank 0's model.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/data_parallel.h"

namespace unitrain {

TEST(BroadcastModule, GivesEveryRankRankZerosWeights) {
  torch::manual_seed(0);
  torch::nn::Sequential reference(torch::nn::Linear(6, 4), torch::nn::Linear(4, 3));
  test::run_ranks(2, [&](int rank, ProcessGroup& g) {
    // each rank its own random initialisation
    torch::nn::Sequential net(torch::nn::Linear(6, 4), torch::nn::Linear(4, 3));
    if (rank == 0) {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < net->parameters().size(); ++i) {
        net->parameters()[i].copy_(reference->parameters()[i]);
      }
    }
    broadcast_module(g, *net);
    for (size_t i = 0; i < net->parameters().size(); ++i) {
      EXPECT_TRUE(torch::equal(net->parameters()[i], reference->parameters()[i])) << rank;
    }
  });
}

TEST(BroadcastModule, BuffersGiveEveryRankRankZerosStatistics) {
  test::run_ranks(2, [](int rank, ProcessGroup& g) {
    torch::nn::BatchNorm1d bn(3);
    bn->train();
    bn->forward(torch::randn({8, 3}) + rank * 10.0);  // each rank's own statistics
    const torch::Tensor weight = bn->weight.detach().clone();
    broadcast_buffers(g, *bn);
    std::vector<torch::Tensor> mean{bn->running_mean.clone()};
    std::vector<torch::Tensor> from0{bn->running_mean.clone()};
    g.broadcast(from0, 0);
    EXPECT_TRUE(torch::equal(mean[0], from0[0])) << rank;   // every rank now has rank 0's
    EXPECT_TRUE(torch::equal(bn->weight, weight)) << rank;  // parameters untouched
  });
}

TEST(BroadcastModule, DifferentModelsAreAnErrorNamingTheFirstDifferenceOnEveryRank) {
  std::vector<std::string> messages(2);
  test::run_ranks(2, [&](int rank, ProcessGroup& g) {
    torch::nn::Sequential net(torch::nn::Linear(4, rank == 0 ? 5 : 6), torch::nn::Linear(5, 2));
    messages[size_t(rank)] = test::error_of<ConfigError>([&] { broadcast_module(g, *net); });
  });
  for (const auto& m : messages) {
    EXPECT_TRUE(test::contains(m, "rank 0 has parameter 0.weight [5, 4]")) << m;
    EXPECT_TRUE(test::contains(m, "rank 1 has parameter 0.weight [6, 4]")) << m;
  }
}

}  // namespace unitrain
