#include "unitrain/parallel/arrival_board.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
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

TEST(ArrivalBoard, ANoticeBehindACollectiveThisRankCompletedIsSeenThere) {
  // Rank 1's last beat was at #159; #160 completed here, so rank 1 was in it (issue 48: the
  // report named #159, one collective stale). A notice already past it, this rank's own and a
  // failed one stay as they are.
  std::vector<std::optional<RankNotice>> notices{arrival_notice(1, 158), arrival_notice(2, 159),
                                                 arrival_notice(3, 161),
                                                 arrival_notice(4, 150, true), std::nullopt};
  CollectiveRecord done;
  done.seq = 160;
  done.op = "reduce_scatter";
  done.step = 15;
  done.phase = "backward";
  done.end = 1001;
  raise_to_completed(notices, 0, done);
  EXPECT_EQ(notices[0]->seq, 158);  // this rank's own
  EXPECT_EQ(notices[1]->collective(), "reduce_scatter #160 (step 15, backward)");
  EXPECT_EQ(notices[2]->seq, 161);
  EXPECT_EQ(notices[3]->seq, 150);
  EXPECT_FALSE(notices[4]);
  done.end = -1;  // still in flight here: no evidence about the others
  notices[1]->seq = 159;
  raise_to_completed(notices, 0, done);
  EXPECT_EQ(notices[1]->seq, 159);
}

TEST(ArrivalBoard, ARankThatTrainedWithoutACollectiveIsSeenWhereItsTrainingWas) {
  // Rank 1 stopped having published no collective of its own, but 5 steps into training.
  RankNotice n = arrival_notice(3, -1);
  n.position_step = 5;
  n.position_phase = "forward";
  std::vector<std::optional<RankNotice>> read{arrival_notice(1, 412), n};
  const auto not_arrived = ranks_not_arrived(412, 0, read, read, 1006.5);
  ASSERT_EQ(not_arrived.size(), 1u);
  EXPECT_EQ(not_arrived[0],
            "rank 1: last seen at step 5 (forward), before any collective of its own 6.5 s ago, "
            "no sign of life since (stopped, ended, or unreachable)");
  n.position_step = 0;  // still starting
  read[1] = n;
  EXPECT_TRUE(test::contains(ranks_silent_before(read, 0, 1006.5, 2)[0],
                             "rank 1: last seen before any collective 6.5 s ago"));
}

TEST(ArrivalBoard, ARankThatFailedEarlierIsTheCauseOnlyWhenNoOtherRankIsNamed) {
  // Rank 1 failed in #25 waiting for rank 2, which stopped (its last beat in #16); this rank (0)
  // got through #25 and waits in #26.
  std::vector<std::optional<RankNotice>> both{arrival_notice(1, 26), arrival_notice(3, 25, true),
                                              arrival_notice(2, 16)};
  std::vector<std::string> lines = ranks_not_arrived(26, 0, both, both, 1006.5);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(test::contains(lines[0], "rank 2: last seen in all_reduce #16")) << lines[0];
  EXPECT_EQ(lines[1],
            "(rank 1 failed earlier, in all_reduce #25 (step 37, backward, bucket 3), "
            "waiting for it)");
  // Alone, the earlier failure is what there is to say.
  both[2]->beat = 9;
  std::vector<std::optional<RankNotice>> moved = both;
  moved[2]->beat = 10;
  moved[2]->seq = 26;
  lines = ranks_not_arrived(26, 0, both, moved, 1006.5);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "rank 1: failed earlier, in all_reduce #25 (step 37, backward, bucket 3)");
}

TEST(ArrivalBoard, AStoppedRankInsideTheCollectiveIsNamed) {
  std::vector<std::optional<RankNotice>> first{arrival_notice(1, 9), arrival_notice(3, 9)};
  const std::vector<std::string> lines = ranks_not_arrived(9, 0, first, first, 1002);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(test::contains(lines[0], "rank 1: last seen in all_reduce #9")) << lines[0];
}

TEST(ArrivalBoard, OneReadNamesOnlyTheRanksThatHadStoppedBeating) {
  // Rank 1 beat 0.4 s ago, rank 2 30 s ago, rank 3 failed itself, rank 4 never published.
  std::vector<std::optional<RankNotice>> read{arrival_notice(1, 9), arrival_notice(5, 9),
                                              arrival_notice(3, 8), arrival_notice(2, 9, true),
                                              std::nullopt};
  read[1]->published = 1029.6;
  const std::vector<std::string> lines = ranks_silent_before(read, 0, 1030, 2.0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "rank 2: last seen in all_reduce #8 (step 37, backward, bucket 3) 30.0 s ago, no sign "
            "of life since (stopped, ended, or unreachable)");
}

/// An in-memory store whose host ends after `answers` checks: every later read fails, as a
/// TCPStore's does when the rank hosting it exits.
class VanishingStore : public c10d::HashStore {
 public:
  explicit VanishingStore(int answers) : answers_(answers) {}
  bool check(const std::vector<std::string>& keys) override {
    if (answers_-- <= 0) throw std::runtime_error("Connection reset by peer\nmore detail");
    return HashStore::check(keys);
  }

 private:
  std::atomic<int> answers_;
};

void publish_notice(c10d::Store& store, int rank, RankNotice n) {
  const std::string text = n.encode();
  store.set("unitrain-arrivals/rank-" + std::to_string(rank),
            std::vector<uint8_t>(text.begin(), text.end()));
}

TEST(ArrivalBoard, AStoreThatGoesAwayIsNotEvidenceAboutAnyRank) {
  // The store answers the first read of 4 ranks, then its host is gone: rank 2 (silent for
  // 30 s at the first read) is named, ranks 1 and 3 (beating) are not, and the store is.
  auto store = c10::make_intrusive<VanishingStore>(4);
  FlightRecorder recorder;
  RankNotice beating = arrival_notice(1, 5);
  beating.published = unix_seconds();
  RankNotice silent = arrival_notice(1, 4);
  silent.published = unix_seconds() - 30;
  publish_notice(*store, 1, beating);
  publish_notice(*store, 2, silent);
  publish_notice(*store, 3, beating);
  auto board = std::make_shared<ArrivalBoard>(store, 0, 4, recorder, std::chrono::milliseconds(100),
                                              "rank 0");
  const ArrivalReport report = board->report_failure(5, std::chrono::seconds(5));
  board->stop();
  ASSERT_EQ(report.missing.size(), 1u) << fmt::format("{}", fmt::join(report.missing, " | "));
  EXPECT_TRUE(test::contains(report.missing[0], "rank 2: last seen in all_reduce #4"))
      << report.missing[0];
  EXPECT_TRUE(test::contains(report.store_note,
                             "the rendezvous store (hosted by rank 0) went away between this "
                             "rank's two reads of the ranks' notices (Connection reset by peer)"))
      << report.store_note;
  EXPECT_FALSE(test::contains(report.store_note, "never published")) << report.store_note;

  // Gone before the first read: nobody is named.
  auto gone = c10::make_intrusive<VanishingStore>(0);
  auto blind = std::make_shared<ArrivalBoard>(gone, 0, 2, recorder, std::chrono::milliseconds(100),
                                              "rank 0");
  const ArrivalReport none = blind->report_failure(5, std::chrono::seconds(5));
  blind->stop();
  EXPECT_TRUE(none.missing.empty()) << fmt::format("{}", fmt::join(none.missing, " | "));
  EXPECT_TRUE(test::contains(none.store_note, "no rank can be named")) << none.store_note;
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
