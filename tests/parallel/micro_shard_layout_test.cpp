// distributed.reproducible's layout: chunk boundaries that no world size moves, each rank a
// contiguous run of whole chunks, shards interleaved over ranks, a world size not dividing G
// refused by name.
#include "unitrain/parallel/micro_shard_layout.h"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"

namespace unitrain {
namespace {

TEST(MicroShardLayout, ChunksAreTheSameForEveryWorldSizeAndEachRankOwnsARunOfThem) {
  const int64_t numel = 10007;  // not a multiple of 12 chunks: the last chunk is padded
  const MicroShardLayout one(numel, 12, 1, 0);
  EXPECT_EQ(one.chunk_numel() % MicroShardLayout::kChunkAlign, 0);
  EXPECT_GE(one.padded_numel(), numel);
  EXPECT_LT(one.padded_numel() - numel, 12 * MicroShardLayout::kChunkAlign);
  for (int world : {1, 2, 3, 4, 6, 12}) {
    int64_t next = 0;  // the owned slices, rank after rank, tile the padded buffer
    std::vector<int> shards_seen(12, 0);
    for (int rank = 0; rank < world; ++rank) {
      const MicroShardLayout layout(numel, 12, world, rank);
      EXPECT_EQ(layout.chunk_numel(), one.chunk_numel()) << world;
      EXPECT_EQ(layout.padded_numel(), one.padded_numel()) << world;
      EXPECT_EQ(layout.micro_steps(), 12 / world);
      EXPECT_EQ(layout.owned_offset(), next) << world << " " << rank;
      EXPECT_EQ(layout.owned_offset() % MicroShardLayout::kChunkAlign, 0);
      EXPECT_EQ(layout.owned_numel(), layout.chunks_per_rank() * layout.chunk_numel());
      next += layout.owned_numel();
      for (int c = layout.first_chunk_of(rank); c < layout.first_chunk_of(rank + 1); ++c) {
        EXPECT_EQ(layout.owner_of_chunk(c), rank);
      }
      for (int i = 0; i < layout.micro_steps(); ++i)
        ++shards_seen[size_t(layout.shard_at(i, rank))];
    }
    EXPECT_EQ(next, one.padded_numel()) << world;
    EXPECT_EQ(shards_seen, std::vector<int>(12, 1)) << world;  // every shard, once
  }
  EXPECT_EQ(MicroShardLayout(10007, 12, 4, 1).shard_at(2, 1), 9);  // i * W + r
}

TEST(MicroShardLayout, ASmallOrEmptyBufferStillHasOneAlignedChunkPerShard) {
  for (int64_t numel : {0, 1, 11, 64 * 12, 64 * 12 + 1}) {
    const MicroShardLayout layout(numel, 12, 3, 2);
    EXPECT_GE(layout.padded_numel(), numel);
    EXPECT_GE(layout.chunk_numel(), MicroShardLayout::kChunkAlign);
    EXPECT_EQ(layout.chunk_numel() % MicroShardLayout::kChunkAlign, 0);
  }
  EXPECT_EQ(MicroShardLayout(64 * 12, 12, 1, 0).chunk_numel(), 64);
  EXPECT_EQ(MicroShardLayout(64 * 12 + 1, 12, 1, 0).chunk_numel(), 128);
}

TEST(MicroShardLayout, AWorldSizeThatDoesNotDivideTheShardsIsRefusedByName) {
  const std::string message =
      test::error_of<ConfigError>([] { MicroShardLayout(10007, 12, 5, 0); });
  EXPECT_TRUE(test::contains(message, "distributed.reproducible")) << message;
  EXPECT_TRUE(test::contains(message, "G = 12")) << message;
  EXPECT_TRUE(test::contains(message, "5 processes")) << message;
  EXPECT_TRUE(test::contains(message, "1, 2, 3, 4, 6 or 12")) << message;
  EXPECT_TRUE(test::contains(test::error_of<ConfigError>([] { MicroShardLayout(1, 0, 1, 0); }),
                             "distributed.reproducible"));
}

}  // namespace
}  // namespace unitrain
