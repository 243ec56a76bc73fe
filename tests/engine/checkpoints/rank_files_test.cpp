// write_rank_files on its own, three ranks of one in-memory group: what rank 0 is told of the
// others' files (name, path, size, CRC: what it moves into the checkpoint folder), and a rank
// that cannot write, which every rank names.
#include "unitrain/engine/checkpoints/rank_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "parallel/run_ranks.h"
#include "test_util.h"
#include "unitrain/checkpoint/file_image.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

std::string bytes_of(int rank) { return "the part of rank " + std::to_string(rank); }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(RankFiles, RankZeroLearnsEveryOtherRanksFile) {
  const std::string root = test::temp_dir() + "/checkpoints";
  std::vector<CheckpointFile> told;
  std::mutex lock;
  test::run_ranks(3, [&](int rank, ProcessGroup& group) {
    std::vector<CheckpointFile> files = write_rank_files(
        group, root, 7, "optim", "optimizer partition",
        [](int r) { return "optimizer-rank-" + std::to_string(r) + ".pt"; },
        [rank] {
          const std::string s = bytes_of(rank);
          return std::vector<char>(s.begin(), s.end());
        });
    if (rank != 0) return;
    std::lock_guard<std::mutex> hold(lock);
    told = std::move(files);
  });
  ASSERT_EQ(told.size(), 2u);  // rank 0's own file is its caller's
  for (int r = 1; r <= 2; ++r) {
    const CheckpointFile& f = told[size_t(r - 1)];
    EXPECT_EQ(f.name, "optimizer-rank-" + std::to_string(r) + ".pt");
    // A partial file beside the checkpoints, which clean_partial removes if the save fails.
    const std::string file = std::filesystem::path(f.move_from).filename().string();
    EXPECT_EQ(file.rfind(".partial-optim-step-7-rank-" + std::to_string(r) + "-", 0), 0u) << file;
    EXPECT_EQ(std::filesystem::path(f.move_from).parent_path(), std::filesystem::path(root));
    EXPECT_EQ(read(f.move_from), bytes_of(r));
    EXPECT_EQ(f.moved_size, bytes_of(r).size());
    const std::string b = bytes_of(r);
    EXPECT_EQ(f.moved_crc32, crc32_of(b.data(), b.size()));
  }
}

TEST(RankFiles, ARankThatCannotWriteFailsEveryRankNamingIt) {
  const std::string root = test::temp_dir() + "/checkpoints";
  std::vector<std::string> errors(3);
  test::run_ranks(3, [&](int rank, ProcessGroup& group) {
    errors[size_t(rank)] = test::message_of([&] {
      write_rank_files(
          group, root, 4, "model", "model part", [](int r) { return std::to_string(r); },
          [rank]() -> std::vector<char> {
            if (rank == 2) throw std::runtime_error("disk full");
            return {'x'};
          });
    });
  });
  for (int rank = 0; rank < 3; ++rank) {  // none waits for a file that will not come
    const std::string& m = errors[size_t(rank)];
    EXPECT_TRUE(
        test::contains(m, "rank 2 could not write its model part for the checkpoint of step 4"))
        << "rank " << rank << ": " << m;
    EXPECT_TRUE(test::contains(m, "disk full")) << "rank " << rank << ": " << m;
  }
}

}  // namespace
}  // namespace unitrain
