#include "unitrain/parallel/data_parallel.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <functional>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/reduce_metrics.h"

namespace unitrain {
namespace {

using test::contains;
using test::run_ranks;

struct Net : torch::nn::Module {
  Net() {
    // Registered first, so its bucket comes last (buckets follow reverse registration order):
    // the others can launch while backward runs.
    unused = register_module("unused", torch::nn::Linear(3, 3));
    a = register_module("a", torch::nn::Linear(6, 16));
    b = register_module("b", torch::nn::Linear(16, 8));
    c = register_module("c", torch::nn::Linear(8, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return c->forward(torch::relu(b->forward(torch::relu(a->forward(x)))));
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr}, unused{nullptr};
};

torch::Tensor loss_of(Net& net, const torch::Tensor& x, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(net.forward(x), y);
}

struct Data {
  torch::Tensor x = torch::randn({8, 6}, torch::TensorOptions().dtype(torch::kFloat));
  torch::Tensor y = torch::randint(0, 3, {8});
};

TEST(ProcessGroup, CollectivesAcrossThreadsAsRanks) {
  run_ranks(3, [](int rank, ProcessGroup& g) {
    std::vector<torch::Tensor> t{torch::full({2}, double(rank + 1))};
    g.all_reduce_sum(t);
    EXPECT_TRUE(torch::equal(t[0], torch::full({2}, 6.0)));
    std::vector<torch::Tensor> m{torch::full({1}, double(rank))};
    g.all_reduce_max(m);
    EXPECT_EQ(m[0].item<double>(), 2.0);
    std::vector<torch::Tensor> b{torch::full({3}, double(rank))};
    g.broadcast(b, 1);
    EXPECT_TRUE(torch::equal(b[0], torch::full({3}, 1.0)));
    auto texts = g.all_gather(std::string(size_t(rank) * 2, char('a' + rank)));
    EXPECT_EQ(texts, (std::vector<std::string>{"", "bb", "cccc"}));
    EXPECT_EQ(g.all_gather(""), (std::vector<std::string>{"", "", ""}));  // nothing anywhere
    g.barrier();
  });
}

/// Gradients of one process on all 8 samples against 2 ranks on 4 samples each (rank r takes
/// samples r, r+2, ...), the way a sharded loader splits a batch.
void expect_same_gradients_as_one_process(double bucket_mb, int accumulation,
                                          bool partitioned = false) {
  torch::manual_seed(1);
  Data data;
  Net single;
  std::vector<torch::Tensor> reference;
  {
    const int64_t per = 8 / accumulation;
    for (int m = 0; m < accumulation; ++m) {
      auto xs = data.x.narrow(0, m * per, per), ys = data.y.narrow(0, m * per, per);
      (loss_of(single, xs, ys) / accumulation).backward();
    }
    for (auto& p : single.parameters())
      reference.push_back(p.grad().defined() ? p.grad().clone() : p.grad());
  }
  run_ranks(2, [&](int rank, ProcessGroup& g) {
    Net net;
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < net.parameters().size(); ++i) {
        net.parameters()[i].copy_(single.parameters()[i]);
      }
    }
    DataParallelOptions options;
    options.bucket_mb = bucket_mb;
    if (partitioned) options.owners = bucket_owners(net.parameters(), 2);
    DataParallelSync sync(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), net.parameters(),
                          options);
    EXPECT_EQ(sync.gradients_partitioned(), partitioned);
    const int64_t per = 8 / accumulation;
    for (int m = 0; m < accumulation; ++m) {
      // This micro-batch's samples on this rank: every second of the global micro-batch.
      auto idx = torch::arange(m * per + rank, (m + 1) * per, 2);
      sync.before_backward(m == accumulation - 1);
      (loss_of(net, data.x.index_select(0, idx), data.y.index_select(0, idx)) / accumulation)
          .backward();
    }
    sync.finish(net.parameters());
    const auto params = net.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      if (partitioned && options.owners[i] != rank) {  // ZeRO-2: its owner alone keeps it
        EXPECT_FALSE(params[i].grad().defined()) << "parameter " << i << " rank " << rank;
        continue;
      }
      if (!reference[i].defined()) {
        // unused: no rank produced a gradient, and none is given, as in one process (the
        // optimizer skips it), without find_unused_parameters too
        EXPECT_FALSE(params[i].grad().defined()) << "parameter " << i << " rank " << rank;
        continue;
      }
      EXPECT_TRUE(torch::allclose(params[i].grad(), reference[i], 1e-5, 1e-7))
          << "parameter " << i << " rank " << rank;
    }
    if (bucket_mb < 0.001) {  // one parameter per bucket
      EXPECT_GT(sync.buckets(), 3u);
      EXPECT_GT(sync.launched_in_backward(), 0);  // reduces started while backward ran
      EXPECT_GT(sync.launched_in_finish(), 0);    // the unused layer's bucket waited for finish
    }
  });
}

TEST(DataParallel, AveragedGradientsEqualOneProcessOnTheWholeBatch) {
  expect_same_gradients_as_one_process(/*bucket_mb=*/25, /*accumulation=*/1);
  expect_same_gradients_as_one_process(/*bucket_mb=*/0.00001, /*accumulation=*/1);
}

TEST(DataParallel, AccumulationMicroStepsReduceOnlyAtTheBoundary) {
  expect_same_gradients_as_one_process(/*bucket_mb=*/0.00001, /*accumulation=*/2);
}

TEST(DataParallel, ZeroStageTwoReducesEachBucketToItsOwnerOnly) {
  expect_same_gradients_as_one_process(/*bucket_mb=*/25, /*accumulation=*/1, true);
  expect_same_gradients_as_one_process(/*bucket_mb=*/0.00001, /*accumulation=*/2, true);
}

TEST(DataParallel, PartitionContiguousBalancesRunsInOrder) {
  EXPECT_EQ(partition_contiguous({10, 10, 10, 10}, 2), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(partition_contiguous({100, 1, 1, 1}, 2), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(partition_contiguous({5, 5, 5}, 1), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(partition_contiguous({1, 1, 1, 1, 1, 1}, 3), (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(partition_contiguous({0, 0}, 2), (std::vector<int>{0, 0}));
}

TEST(DataParallel, FindUnusedParametersLeavesParametersNoRankUsedWithoutGradient) {
  torch::manual_seed(2);
  Data data;
  run_ranks(2, [&](int rank, ProcessGroup& g) {
    torch::manual_seed(3);
    Net net;
    DataParallelOptions options;
    options.find_unused_parameters = true;
    options.bucket_mb = 0.0002;
    DataParallelSync sync(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), net.parameters(),
                          options);
    sync.before_backward(true);
    torch::Tensor out = net.forward(data.x);
    // Layer `unused` takes part on rank 1 only.
    if (rank == 1) out = net.unused->forward(out);
    torch::nn::functional::cross_entropy(out, data.y).backward();
    sync.finish(net.parameters());
    EXPECT_TRUE(net.unused->weight.grad().defined()) << rank;  // used by some rank: averaged
    // Both ranks hold the same averaged gradient.
    std::vector<torch::Tensor> sum{net.unused->weight.grad().clone()};
    g.all_reduce_sum(sum);
    EXPECT_TRUE(torch::allclose(sum[0], 2 * net.unused->weight.grad()));

    // A step where no rank uses it: no gradient at all, as in one process.
    net.zero_grad();
    for (auto& p : net.parameters()) p.mutable_grad() = torch::Tensor();
    sync.before_backward(true);
    torch::nn::functional::cross_entropy(net.forward(data.x), data.y).backward();
    sync.finish(net.parameters());
    EXPECT_FALSE(net.unused->weight.grad().defined()) << rank;
    EXPECT_TRUE(net.a->weight.grad().defined()) << rank;
  });
}

TEST(DataParallel, AParameterUsedEarlierInTheWindowKeepsItsGradient) {
  torch::manual_seed(5);
  Data data;
  run_ranks(2, [&](int rank, ProcessGroup& g) {
    Net net;
    broadcast_module(g, net);  // the same weights on both ranks
    DataParallelOptions options;
    options.bucket_mb = 0.0002;
    DataParallelSync sync(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), net.parameters(),
                          options);
    // Micro-batch 1 of 2 uses `unused`; the window's last one does not.
    sync.before_backward(false);
    torch::nn::functional::cross_entropy(net.unused->forward(net.forward(data.x)), data.y)
        .backward();
    const torch::Tensor first = net.unused->weight.grad().clone();
    sync.before_backward(true);
    torch::nn::functional::cross_entropy(net.forward(data.x), data.y).backward();
    sync.finish(net.parameters());
    EXPECT_FALSE(sync.agreed().missing_gradient) << rank;
    ASSERT_TRUE(net.unused->weight.grad().defined()) << rank;
    // Every rank used the same data: the average of equal gradients is that gradient.
    EXPECT_TRUE(torch::allclose(net.unused->weight.grad(), first, 1e-5, 1e-7)) << rank;
  });
}

TEST(DataParallel, OwnGradientTensorsForAModuleThatStepsItsOwnOptimizers) {
  torch::manual_seed(7);
  Data data;
  run_ranks(2, [&](int rank, ProcessGroup& g) {
    Net net;
    broadcast_module(g, net);
    DataParallelOptions options;
    options.gradient_views = false;
    options.find_unused_parameters = true;
    DataParallelSync sync(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), net.parameters(),
                          options);
    torch::optim::SGD optimizer(net.parameters(), 0.1);
    auto idx = torch::arange(rank, 8, 2);
    torch::Tensor x = data.x.index_select(0, idx), y = data.y.index_select(0, idx);
    // Backward 1 uses `unused`, backward 2 does not: its gradient stays what backward 1 made.
    sync.before_backward(true);
    torch::nn::functional::cross_entropy(net.unused->forward(net.forward(x)), y).backward();
    sync.finish(net.parameters());
    const torch::Tensor after_first = net.unused->weight.grad().clone();
    sync.before_backward(true);
    torch::nn::functional::cross_entropy(net.forward(x), y).backward();
    sync.finish(net.parameters());
    EXPECT_TRUE(sync.agreed().missing_gradient) << rank;
    EXPECT_TRUE(torch::equal(net.unused->weight.grad(), after_first)) << rank;
    // Each gradient is a tensor of its own: the optimizer's zero_grad() detaches it in place
    // (a view of a bucket cannot be) and zeroes it (LibTorch 1.x) or frees it (2.x).
    EXPECT_NO_THROW(optimizer.zero_grad()) << rank;
    const torch::Tensor& grad = net.a->weight.grad();
    EXPECT_TRUE(!grad.defined() || grad.abs().sum().item<double>() == 0.0);
  });
}

void expect_decisions_combined(bool partitioned) {
  torch::manual_seed(4);
  Data data;
  run_ranks(2, [&](int rank, ProcessGroup& g) {
    Net net;
    DataParallelOptions options;
    options.bucket_mb = 0.00001;
    if (partitioned) options.owners = bucket_owners(net.parameters(), 2);
    DataParallelSync sync(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), net.parameters(),
                          options);
    ASSERT_TRUE(sync.shares_decisions());
    StepDecision mine;
    if (rank == 0) mine.nonfinite = true;  // say its loss was NaN
    if (rank == 1) mine.signal = SIGTERM;
    if (rank == 1) mine.pause = true;
    sync.share(mine);
    sync.before_backward(true);
    if (rank == 0) {
      // This rank skips its backward: it still joins every reduce.
    } else {
      loss_of(net, data.x, data.y).backward();
    }
    sync.finish(net.parameters());
    StepDecision agreed = sync.agreed();
    EXPECT_TRUE(agreed.nonfinite) << rank;
    EXPECT_FALSE(agreed.stop) << rank;
    EXPECT_EQ(agreed.signal, SIGTERM) << rank;
    EXPECT_TRUE(agreed.pause) << rank;
    // The next step starts from no decision.
    sync.before_backward(true);
    loss_of(net, data.x, data.y).backward();
    sync.finish(net.parameters());
    agreed = sync.agreed();
    EXPECT_FALSE(agreed.nonfinite || agreed.stop || agreed.signal != 0 || agreed.pause) << rank;
    // train.loss_reads: deferred — a rank's non-finite loss known only on its device joins
    // the decision unread; a false flag adds nothing.
    for (bool bad : {true, false}) {
      sync.share(StepDecision{}, torch::tensor(rank == 1 && bad));
      sync.before_backward(true);
      loss_of(net, data.x, data.y).backward();
      sync.finish(net.parameters());
      EXPECT_EQ(sync.agreed().nonfinite, bad) << rank;
    }
  });
}

TEST(DataParallel, StepDecisionsTravelWithTheGradientsAndComeBackCombined) {
  expect_decisions_combined(false);
}

TEST(DataParallel, ZeroStageTwoAgreesOnDecisionsAndSumsNormsAcrossRanks) {
  expect_decisions_combined(true);
  run_ranks(3, [](int rank, ProcessGroup& g) {
    Net net;
    DataParallelOptions options;
    options.owners = bucket_owners(net.parameters(), 3);
    DataParallelSync sync(std::shared_ptr<ProcessGroup>(&g, [](ProcessGroup*) {}), net.parameters(),
                          options);
    EXPECT_EQ(sync.sum_across_ranks(rank + 0.5), 4.5);
  });
}

TEST(ReduceMetrics, MeansOverEveryRanksSamplesCountedOnce) {
  run_ranks(3, [](int rank, ProcessGroup& g) {
    MetricAccumulator acc;
    // Rank r saw r+1 samples of value r (loss), and only rank 2 saw "rare".
    acc.add("loss", MetricValue(torch::tensor(double(rank), torch::kFloat64)), rank + 1);
    if (rank == 2) acc.add("rare", MetricValue(torch::tensor(5.0, torch::kFloat64)), 2);
    all_reduce_metrics(g, acc);
    auto r = acc.result();
    // (0*1 + 1*2 + 2*3) / (1 + 2 + 3)
    EXPECT_DOUBLE_EQ(r.at("loss"), 8.0 / 6.0);
    EXPECT_DOUBLE_EQ(r.at("rare"), 5.0);
    EXPECT_DOUBLE_EQ(acc.sums().at("loss").weight, 6.0);
  });
}

}  // namespace
}  // namespace unitrain
