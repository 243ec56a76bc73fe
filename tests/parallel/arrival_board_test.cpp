#include "unitrain/parallel/arrival_board.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "test_util.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

RankNotice arrival_notice(int64_t beat, int64_t seq, bool failed = false) {
  RankNotice n;
  n.beat = beat;
  n.seq = seq;
  n.op = "all_reduce";
  n.step = 37;
  n.phase = "backward";
  n.bucket = 3;
  n.failed = failed;
  n.position_step = 38;
  n.position_phase = "data wait";
  n.published = 1000;
  return n;
}

TEST(ArrivalBoard, NoticeRoundTrips) {
  const RankNotice n = arrival_notice(7, 412);
  const std::optional<RankNotice> back = RankNotice::decode(n.encode());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->encode(), n.encode());
  EXPECT_EQ(back->collective(), "all_reduce #412 (step 37, backward, bucket 3)");
  EXPECT_FALSE(RankNotice::decode("7\tnot a notice"));
}

TEST(ArrivalBoard, NamesTheRanksThatDidNotArrive) {
  // This rank (0) failed in #412. Rank 1 arrived and beats on; rank 2 stopped in #411; rank 3
  // runs but stays in data wait; rank 4 failed in #412 too; rank 5 never published.
  std::vector<std::optional<RankNotice>> first{arrival_notice(1, 412),       arrival_notice(5, 412),
                                               arrival_notice(3, 411),       arrival_notice(2, 409),
                                               arrival_notice(4, 412, true), std::nullopt};
  std::vector<std::optional<RankNotice>> second = first;
  second[1]->beat = 7;
  second[3]->beat = 4;
  const std::vector<std::string> lines = ranks_not_arrived(412, 0, first, second, 1006.5);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "rank 2: last seen in all_reduce #411 (step 37, backward, bucket 3) 6.5 s ago, no sign "
            "of life since (stopped, ended, or unreachable)");
  EXPECT_EQ(lines[1],
            "rank 3: running, but not in this collective: at step 38 (data wait); its last "
            "collective all_reduce #409 (step 37, backward, bucket 3)");
  EXPECT_TRUE(test::contains(lines[2], "rank 5: never published")) << lines[2];
}

TEST(ArrivalBoard, AStoppedRankInsideTheCollectiveIsNamed) {
  std::vector<std::optional<RankNotice>> first{arrival_notice(1, 9), arrival_notice(3, 9)};
  const std::vector<std::string> lines = ranks_not_arrived(9, 0, first, first, 1002);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(test::contains(lines[0], "rank 1: last seen in all_reduce #9")) << lines[0];
}

TEST(ArrivalBoard, ATimedOutCollectiveNamesTheRankThatDidNotCome) {
  // Ranks 0 and 1 all-reduce; rank 2 never does (it waits for them, alive): their errors name
  // it and where it is, and each writes its flight record.
  auto store = c10::make_intrusive<c10d::HashStore>();
  const std::string dir = test::temp_dir();
  std::vector<std::string> errors(3);
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        ProcessGroupOptions options;
        options.interface = "lo";
        options.timeout = std::chrono::seconds(1);
        options.flight_file = dir + "/logs/flight-rank-" + std::to_string(r) + ".json";
        auto group = ProcessGroup::over_store(store, r, 3, options);
        if (r == 2) {
          while (done < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          return;
        }
        std::vector<torch::Tensor> t{torch::ones({4})};
        try {
          group->all_reduce_sum(t);
        } catch (const std::exception& e) {
          errors[size_t(r)] = e.what();
        }
        ++done;
      } catch (const std::exception& e) {
        errors[size_t(r)] = std::string("setup: ") + e.what();
        ++done;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r : {0, 1}) {
    const std::string& e = errors[size_t(r)];
    EXPECT_TRUE(test::contains(e, "rank " + std::to_string(r) + ": all_reduce #0 (step 0")) << e;
    EXPECT_TRUE(test::contains(e, "did not arrive: rank 2: running, but not in this collective"))
        << e;
    EXPECT_FALSE(test::contains(e, "rank " + std::to_string(1 - r) + ":")) << e;
    std::ifstream in(dir + "/logs/flight-rank-" + std::to_string(r) + ".json");
    ASSERT_TRUE(in.good()) << "rank " << r;
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["records"].back()["failed"], true);
    EXPECT_EQ(j["peers"].size(), 1u);
  }
  EXPECT_EQ(errors[2], "");
}

}  // namespace
}  // namespace unitrain
