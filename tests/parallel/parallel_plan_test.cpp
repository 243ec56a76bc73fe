// The job's processes as data-parallel replicas of tensor groups of consecutive ranks.
#include "unitrain/parallel/parallel_plan.h"

#include <gtest/gtest.h>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

TEST(ParallelPlan, TensorGroupsAreConsecutiveRanksAndReplicasTheSamePlaceInEach) {
  test::run_shared_ranks(4, [](int rank, const std::shared_ptr<ProcessGroup>& world) {
    const ParallelPlan plan = ParallelPlan::make(world, 2);
    ASSERT_NE(plan.tensor_group, nullptr);
    EXPECT_EQ(plan.tensor_group->rank(), rank % 2);
    EXPECT_EQ(plan.data_rank(), rank / 2);
    EXPECT_EQ(plan.data_size(), 2);
    // Ranks 0+1 and 2+3 compute a model each; 0+2 and 1+3 are replicas.
    EXPECT_EQ(plan.tensor_group->sum_of(rank), rank < 2 ? 1 : 5);
    EXPECT_EQ(plan.data->sum_of(rank), rank % 2 == 0 ? 2 : 4);
  });
}

TEST(ParallelPlan, OneReplicaHasNoDataGroupAndNoSplitKeepsTheWorld) {
  test::run_shared_ranks(2, [](int, const std::shared_ptr<ProcessGroup>& world) {
    const ParallelPlan cut = ParallelPlan::make(world, 2);
    EXPECT_EQ(cut.data, nullptr);
    EXPECT_EQ(cut.data_size(), 1);
    const ParallelPlan whole = ParallelPlan::make(world, 1);
    EXPECT_EQ(whole.data, world);
    EXPECT_EQ(whole.tensor_group, nullptr);
  });
  EXPECT_EQ(ParallelPlan::make(nullptr, 1).data_size(), 1);
}

TEST(ParallelPlan, PipelinesRunAcrossTensorGroupsInsideEachReplica) {
  // World 8 = 2 replicas x 2 stages x 2 parts: rank = (replica * 2 + stage) * 2 + part.
  test::run_shared_ranks(8, [](int rank, const std::shared_ptr<ProcessGroup>& world) {
    const ParallelPlan plan = ParallelPlan::make(world, 2, 2);
    ASSERT_NE(plan.pipe, nullptr);
    ASSERT_NE(plan.tensor_group, nullptr);
    EXPECT_TRUE(plan.cuts_model());
    EXPECT_EQ(plan.data_rank(), rank / 4);
    EXPECT_EQ(plan.pipe->world_size(), 2);
    // A pipe: the same replica and part at each stage (ranks r and r + 2).
    const int first = rank / 4 * 4 + rank % 2;
    EXPECT_EQ(plan.pipe->sum_of(rank), first + first + 2) << rank;
    // The tensor group: consecutive pairs; the replicas: ranks 4 apart.
    EXPECT_EQ(plan.tensor_group->sum_of(rank), rank / 2 * 4 + 1);
    EXPECT_EQ(plan.data->sum_of(rank), rank % 4 * 2 + 4);
  });
}

TEST(ParallelPlan, UnderZeroThePartitionWritersAreTheFirstPartOfEveryStageOfEveryReplica) {
  // World 8 = 2 replicas x 2 stages x 2 parts: ranks 0, 2, 4 and 6 write partitions.
  test::run_shared_ranks(8, [](int rank, const std::shared_ptr<ProcessGroup>& world) {
    const ParallelPlan plan = ParallelPlan::make(world, 2, 2, /*zero=*/true);
    if (rank % 2 == 1) {
      EXPECT_EQ(plan.partitions, nullptr);
    } else if (plan.partitions) {
      EXPECT_EQ(plan.partitions->world_size(), 4);
      EXPECT_EQ(plan.partitions->rank(), rank / 2);  // replica x P + pipe rank
      EXPECT_EQ(plan.partitions->sum_of(rank), 0 + 2 + 4 + 6);
    } else {
      ADD_FAILURE() << "rank " << rank << " has no partitions group";
    }
    EXPECT_EQ(world->sum_of(1), 8);  // every rank done with the groups before any goes
  });
  test::run_shared_ranks(4, [](int, const std::shared_ptr<ProcessGroup>& world) {
    EXPECT_EQ(ParallelPlan::make(world, 2, 2, /*zero=*/true).partitions, nullptr);  // 1 replica
  });
  test::run_shared_ranks(4, [](int, const std::shared_ptr<ProcessGroup>& world) {
    EXPECT_EQ(ParallelPlan::make(world, 1, 2).partitions, nullptr);  // 2 replicas, no zero
  });
}

TEST(ParallelPlan, APipelineWithoutTensorGroupsHasNone) {
  test::run_shared_ranks(2, [](int rank, const std::shared_ptr<ProcessGroup>& world) {
    const ParallelPlan plan = ParallelPlan::make(world, 1, 2);
    EXPECT_EQ(plan.tensor_group, nullptr);
    EXPECT_EQ(plan.data, nullptr);
    ASSERT_NE(plan.pipe, nullptr);
    EXPECT_EQ(plan.pipe->rank(), rank);
  });
  test::run_shared_ranks(6, [](int, const std::shared_ptr<ProcessGroup>& world) {
    const std::string e = test::config_error_of([&] { ParallelPlan::make(world, 2, 2); });
    EXPECT_TRUE(test::contains(e,
                               "distributed.tensor_parallel x pipeline_parallel: 2 x 2 = 4 does "
                               "not divide the job's 6 processes"))
        << e;
  });
}

TEST(ParallelPlan, ASplitThatDoesNotDivideTheProcessesIsRefusedByKey) {
  test::run_shared_ranks(3, [](int, const std::shared_ptr<ProcessGroup>& world) {
    const std::string e = test::config_error_of([&] { ParallelPlan::make(world, 2); });
    EXPECT_TRUE(test::contains(e,
                               "distributed.tensor_parallel: 2 does not divide the job's 3 "
                               "processes"))
        << e;
  });
}

}  // namespace
}  // namespace unitrain
