// A pipeline's stages: the units cut by cost or where the config says, and the messages between
// neighbours — an activation of any shape and dtype forward, its gradient back, sends that do
// not wait for their receiver.
#include "unitrain/parallel/pipeline_stage.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using Starts = std::vector<size_t>;

TEST(PipelineStage, StagesAreBalancedByCostTheEarlierCutOnATie) {
  EXPECT_EQ(balanced_stage_starts({1, 1, 1, 1}, 2), (Starts{0, 2}));
  EXPECT_EQ(balanced_stage_starts({1, 1, 1, 1}, 4), (Starts{0, 1, 2, 3}));
  // Free embeddings, 4 blocks, a light head: the embeddings ride with the first blocks.
  EXPECT_EQ(balanced_stage_starts({0, 10, 10, 10, 10, 3}, 2), (Starts{0, 3}));
  EXPECT_EQ(balanced_stage_starts({0, 10, 10, 10, 10, 3}, 3), (Starts{0, 2, 4}));
  // One heavy unit alone; the rest share.
  EXPECT_EQ(balanced_stage_starts({1, 9, 1, 1}, 2), (Starts{0, 2}));
  EXPECT_EQ(balanced_stage_starts({5}, 1), (Starts{0}));
}

TEST(PipelineStage, FewerUnitsThanStagesAndBadCutsAreRefusedByKey) {
  std::string e = test::config_error_of([] { balanced_stage_starts({1, 1, 1}, 4); });
  EXPECT_TRUE(test::contains(e, "distributed.pipeline_parallel: 4 stages, but the model runs 3"))
      << e;
  EXPECT_EQ(named_stage_starts({2, 3}, 5, 3), (Starts{0, 2, 3}));
  e = test::config_error_of([] { named_stage_starts({3, 2}, 5, 3); });
  EXPECT_TRUE(test::contains(e, "distributed.pipeline_cuts.1: 2 is not a unit after")) << e;
  e = test::config_error_of([] { named_stage_starts({5}, 5, 2); });
  EXPECT_TRUE(test::contains(e, "distributed.pipeline_cuts.0: 5")) << e;
  e = test::config_error_of([] { named_stage_starts({1}, 5, 3); });
  EXPECT_TRUE(test::contains(e,
                             "distributed.pipeline_cuts: 1 cut for "
                             "distributed.pipeline_parallel: 3 stages; give 2"))
      << e;
}

TEST(PipelineStage, TheLastStageIsRankZeroAndEachStageKnowsItsUnits) {
  test::run_shared_ranks(3, [](int rank, const std::shared_ptr<ProcessGroup>& group) {
    PipelineStage stage(group, {0, 2, 3}, 5);
    EXPECT_EQ(stage.stage(), 2 - rank);
    EXPECT_EQ(stage.last(), rank == 0);
    EXPECT_EQ(stage.first(), rank == 2);
    const Starts ends{2, 3, 5};
    EXPECT_EQ(stage.first_unit(), (Starts{0, 2, 3})[size_t(stage.stage())]);
    EXPECT_EQ(stage.end_unit(), ends[size_t(stage.stage())]);
    EXPECT_EQ(stage.stage_of(0), 0);
    EXPECT_EQ(stage.stage_of(2), 1);
    EXPECT_EQ(stage.stage_of(4), 2);
  });
}

TEST(PipelineStage, ActivationsGoForwardWithTheirShapeAndGradientsComeBack) {
  test::run_shared_ranks(2, [](int, const std::shared_ptr<ProcessGroup>& group) {
    PipelineStage stage(group, {0, 1}, 2);
    if (stage.first()) {
      // Two micro-batches sent before any gradient comes back (1F1B's warm-up); bfloat16 and a
      // shape the receiver does not know.
      for (int micro = 0; micro < 2; ++micro) {
        stage.send_activation(torch::full({2, 3, micro + 1}, micro + 0.5, torch::kBFloat16), micro);
      }
      for (int micro = 0; micro < 2; ++micro) {
        torch::Tensor out = torch::zeros({4}, torch::kFloat64);
        torch::Tensor grad = stage.receive_gradient(out, micro);
        EXPECT_TRUE(torch::equal(grad, torch::full({4}, 10.0 + micro, torch::kFloat64)));
      }
      stage.wait_sends();
    } else {
      // The gradient of micro-batch 0 is sent before micro-batch 1's activation is read: the
      // neighbours' sends cross, neither waits for the other's receive.
      torch::Tensor x0 = stage.receive_activation(0, torch::kCPU);
      stage.send_gradient(torch::full({4}, 10.0, torch::kFloat64), 0);
      torch::Tensor x1 = stage.receive_activation(1, torch::kCPU);
      stage.send_gradient(torch::full({4}, 11.0, torch::kFloat64), 1);
      EXPECT_EQ(x0.scalar_type(), torch::kBFloat16);
      EXPECT_EQ(x0.sizes(), torch::IntArrayRef({2, 3, 1}));
      EXPECT_EQ(x1.sizes(), torch::IntArrayRef({2, 3, 2}));
      EXPECT_TRUE(torch::equal(x1, torch::full({2, 3, 2}, 1.5, torch::kBFloat16)));
      stage.wait_sends();
    }
  });
}

}  // namespace
}  // namespace unitrain
