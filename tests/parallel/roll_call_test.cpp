#include "unitrain/parallel/roll_call.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/parallel/dist_env.h"

namespace unitrain {
namespace {

using std::chrono::milliseconds;

DistEnv env_of(int rank, int world_size, const char* variable = "WORLD_SIZE") {
  DistEnv e;
  e.rank = rank;
  e.world_size = world_size;
  e.world_size_variable = variable;
  return e;
}

/// What roll_call threw on rank `rank`'s thread, or "" when it returned.
std::string outcome(c10d::Store& store, const DistEnv& env, milliseconds timeout,
                    std::vector<std::string>* notes = nullptr) {
  try {
    roll_call(
        store, env, "host" + std::to_string(env.rank), timeout,
        [&](const std::string& n) {
          if (notes) notes->push_back(n);
        },
        milliseconds(50));
    return "";
  } catch (const TrainError& e) {
    return e.what();
  }
}

TEST(RollCall, RanksThatAgreeGoOn) {
  c10d::HashStore store;
  std::vector<std::string> out(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back(
        [&, r] { out[size_t(r)] = outcome(store, env_of(r, 3), milliseconds(5000)); });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(out, std::vector<std::string>(3, ""));
}

TEST(RollCall, AnotherWorldSizeIsNamedOnBothRanksAtOnce) {
  c10d::HashStore store;
  std::string zero, one;
  // Rank 0 was told 3 ranks, rank 1 two: neither waits out the timeout.
  std::thread t0([&] { zero = outcome(store, env_of(0, 3, "SLURM_NTASKS"), milliseconds(60000)); });
  std::thread t1([&] { one = outcome(store, env_of(1, 2, "SLURM_NTASKS"), milliseconds(60000)); });
  t0.join();
  t1.join();
  EXPECT_NE(one.find("rank 1 (host1) was started for a world of 2 (SLURM_NTASKS=2), rank 0 "
                     "(host0) for a world of 3"),
            std::string::npos)
      << one;
  EXPECT_NE(zero.find("rank 0 (host0) was started for a world of 3 (SLURM_NTASKS=3), rank 1 "
                      "(host1) for a world of 2"),
            std::string::npos)
      << zero;
}

TEST(RollCall, ARankBeyondRankZerosWorldIsRefused) {
  c10d::HashStore store;
  std::string zero, one, two;
  std::thread t0([&] { zero = outcome(store, env_of(0, 2), milliseconds(5000)); });
  std::thread t1([&] { one = outcome(store, env_of(1, 2), milliseconds(5000)); });
  std::thread t2([&] { two = outcome(store, env_of(2, 3), milliseconds(5000)); });
  for (auto* t : {&t0, &t1, &t2}) t->join();
  EXPECT_EQ(zero, "");
  EXPECT_EQ(one, "");
  EXPECT_NE(two.find("rank 2 (host2) was started for a world of 3 (WORLD_SIZE=3), rank 0 (host0) "
                     "for a world of 2"),
            std::string::npos)
      << two;
}

TEST(RollCall, MissingRanksAreNamedWhenTheTimeoutPasses) {
  c10d::HashStore store;
  std::vector<std::string> notes;
  const std::string zero = outcome(store, env_of(0, 3), milliseconds(300), &notes);
  EXPECT_NE(zero.find("rank(s) 1, 2 of a world of 3 (WORLD_SIZE=3) did not arrive within 0 s"),
            std::string::npos)
      << zero;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "waiting for rank(s) 1, 2 to arrive (1 of 3 here)");
}

}  // namespace
}  // namespace unitrain
