// A tensor group's sync: the decision any process takes is every process's, and the gradient
// norm is the whole model's (the parts' squares summed, the whole tensors counted once).
#include "unitrain/parallel/model_group_sync.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "parallel/run_ranks.h"

namespace unitrain {
namespace {

TEST(ModelGroupSync, TheNormIsTheWholeModelsAndADecisionIsEveryones) {
  test::run_shared_ranks(2, [](int rank, const std::shared_ptr<ProcessGroup>& group) {
    auto part = torch::zeros({3}, torch::requires_grad());
    auto whole = torch::zeros({2}, torch::requires_grad());
    part.mutable_grad() = torch::full({3}, double(rank + 1));  // 1s on rank 0, 2s on rank 1
    whole.mutable_grad() = torch::full({2}, 3.0);              // the same on both
    ModelGroupSync sync(std::make_unique<NoGradientSync>(), group, {part});
    EXPECT_TRUE(sync.measures_norm());
    StepDecision mine;
    mine.stop = rank == 1;
    sync.share(mine);
    sync.finish({part, whole});
    EXPECT_TRUE(sync.agreed().stop) << "rank " << rank;
    EXPECT_FALSE(sync.agreed().nonfinite);
    // 3 x 1 + 3 x 4 (the parts) + 2 x 9 (the whole tensor once).
    EXPECT_NEAR(sync.norm(), std::sqrt(3.0 + 12.0 + 18.0), 1e-6);  // float32 norms
    EXPECT_EQ(sync.sum_across_ranks(1.0), 2.0);
  });
}

/// ZeRO 2's replicas as the inner sync: another replica holds the gradients it owns, of the
/// same squares as this one's, so each sum over the replicas doubles.
struct MirroredReplicas : NoGradientSync {
  bool gradients_partitioned() const override { return true; }
  double sum_across_ranks(double local) override { return 2 * local; }
};

TEST(ModelGroupSync, UnderZero2EachReplicasOwnedGradientsAreSummedOverTheReplicasFirst) {
  test::run_shared_ranks(2, [](int rank, const std::shared_ptr<ProcessGroup>& group) {
    auto part = torch::zeros({3}, torch::requires_grad());
    auto whole = torch::zeros({2}, torch::requires_grad());
    auto owned_elsewhere = torch::zeros({4}, torch::requires_grad());  // no gradient here
    part.mutable_grad() = torch::full({3}, double(rank + 1));
    whole.mutable_grad() = torch::full({2}, 3.0);
    ModelGroupSync sync(std::make_unique<MirroredReplicas>(), group, {part, owned_elsewhere});
    sync.finish({part, whole, owned_elsewhere});
    // The parts (3 x 1 + 3 x 4) and the whole tensor (2 x 9) each over both replicas.
    EXPECT_NEAR(sync.norm(), std::sqrt(2 * 15.0 + 2 * 18.0), 1e-6);
  });
}

TEST(ModelGroupSync, APipelinesSharedParameterGetsBothStagesGradientsCountedOnce) {
  // Two stages: each holds its own parameter and both hold a shared one (a tied head).
  test::run_shared_ranks(2, [](int rank, const std::shared_ptr<ProcessGroup>& group) {
    auto own = torch::zeros({2}, torch::requires_grad());
    auto shared = torch::zeros({3}, torch::requires_grad());
    own.mutable_grad() = torch::full({2}, 1.0);
    shared.mutable_grad() = torch::full({3}, double(rank + 1));  // 1s here, 2s there
    ModelGroupSync sync(std::make_unique<NoGradientSync>(), group);
    sync.add_shared(shared, group, /*counted_here=*/rank == 1);
    sync.finish({own, shared});
    EXPECT_TRUE(torch::equal(shared.grad(), torch::full({3}, 3.0)));  // the sum, on both
    // 2 x 1 on each stage, and 3 x 9 once.
    EXPECT_NEAR(sync.norm(), std::sqrt(4.0 + 27.0), 1e-6);
  });
}

}  // namespace
}  // namespace unitrain
