// RunDecisions: stop, pause, signals and the save clock, in one process and across ranks (a
// fake group: each rank's StepDecision summed and decoded as the gradient buckets carry them).
#include "unitrain/engine/loop/run_decisions.h"

#include <gtest/gtest.h>

#include <csignal>
#include <vector>

#include "unitrain/core/save_signals.h"

namespace unitrain {
namespace {

/// Ranks that agree as data-parallel ranks do: every rank's mine() combined, then step_ended().
struct FakeRanks {
  std::vector<std::unique_ptr<RunDecisions>> ranks;
  std::vector<int> signals;

  explicit FakeRanks(int world) : signals(world, 0) {
    for (int r = 0; r < world; ++r) {
      ranks.push_back(std::make_unique<RunDecisions>());
      ranks[r]->start(/*shared=*/world > 1, /*reads_save_clock=*/r == 0, 0, 1e9);
      ranks[r]->set_signal_source([this, r] { return signals[r]; });
    }
  }
  void end_step() {
    std::array<float, StepDecision::kSlots> sum{};
    for (auto& d : ranks) {
      const auto e = d->mine().encode();
      for (int i = 0; i < StepDecision::kSlots; ++i) sum[i] += e[i];
    }
    const StepDecision agreed = StepDecision::decode(sum.data());
    for (auto& d : ranks) d->step_ended(agreed);
  }
  void after_validation() {
    std::vector<bool> asked;
    for (auto& d : ranks) {
      d->agree_after_validation([&](bool mine) {
        asked.push_back(mine);
        return false;  // collected below
      });
    }
    bool any = false;
    for (bool a : asked) any = any || a;
    for (auto& d : ranks) d->agree_after_validation([any](bool) { return any; });
  }
};

TEST(RunDecisions, OneProcessStopsAtOnceWithoutAnAgreement) {
  FakeRanks one(1);
  one.ranks[0]->request_stop();
  EXPECT_TRUE(one.ranks[0]->stop_decided());
  EXPECT_FALSE(one.ranks[0]->act_on_signal_or_pause(true));
  EXPECT_FALSE(one.ranks[0]->ended_early());
}

TEST(RunDecisions, OneProcessActsOnASignalOrAPauseOnce) {
  FakeRanks one(1);
  RunDecisions& d = *one.ranks[0];
  d.request_pause("time budget");
  EXPECT_TRUE(d.act_on_signal_or_pause(true));
  EXPECT_EQ(d.paused(), "time budget");
  EXPECT_FALSE(d.act_on_signal_or_pause(true));  // acted on already
  EXPECT_EQ(d.stopped_by_signal(), 0);

  FakeRanks other(1);
  other.signals[0] = SIGTERM;
  other.ranks[0]->request_pause("");
  EXPECT_TRUE(other.ranks[0]->act_on_signal_or_pause(false));
  EXPECT_EQ(other.ranks[0]->stopped_by_signal(), SIGTERM);
  EXPECT_EQ(other.ranks[0]->paused(), "");  // a signal wins over a pause
  EXPECT_FALSE(other.ranks[0]->act_on_signal_or_pause(false));
  EXPECT_TRUE(other.ranks[0]->ended_early());
}

TEST(RunDecisions, EveryCombinationOnTwoRanksEndsTheSameOnBoth) {
  // For each of stop, pause and signal on rank 0, rank 1, both or neither: after one step both
  // ranks act alike, and what any rank asked for holds for all.
  for (int stop = 0; stop < 4; ++stop) {
    for (int pause = 0; pause < 4; ++pause) {
      for (int sig = 0; sig < 4; ++sig) {
        FakeRanks two(2);
        for (int r = 0; r < 2; ++r) {
          if (stop & (1 << r)) two.ranks[r]->request_stop();
          if (pause & (1 << r)) two.ranks[r]->request_pause("rank " + std::to_string(r));
          if (sig & (1 << r)) two.signals[r] = r == 0 ? SIGINT : SIGTERM;
        }
        EXPECT_FALSE(two.ranks[0]->stop_decided() || two.ranks[1]->stop_decided())
            << "data-parallel stops wait for the agreement";
        two.end_step();
        std::vector<bool> acted;
        for (int r = 0; r < 2; ++r) {
          SCOPED_TRACE(testing::Message() << "stop " << stop << " pause " << pause << " signal "
                                          << sig << " rank " << r);
          EXPECT_EQ(two.ranks[r]->stop_decided(), stop != 0);
          acted.push_back(two.ranks[r]->act_on_signal_or_pause(true));
          EXPECT_EQ(acted[r], sig != 0 || pause != 0);
          EXPECT_EQ(two.ranks[r]->stopped_by_signal(), (sig & 1) ? SIGINT : (sig ? SIGTERM : 0));
          const bool paused = sig == 0 && pause != 0;
          EXPECT_EQ(two.ranks[r]->paused().empty(), !paused);
          if (paused && !(pause & (1 << r))) {
            EXPECT_EQ(two.ranks[r]->paused(), "another rank asked to pause");
          }
        }
      }
    }
  }
}

TEST(RunDecisions, EverySaveSignalTravelsAndSigintWinsOverIt) {
  for (const SaveSignal& s : save_signals()) {
    SCOPED_TRACE(s.name);
    FakeRanks two(2);
    two.signals[1] = s.number;
    two.end_step();
    for (auto& d : two.ranks) {
      EXPECT_TRUE(d->act_on_signal_or_pause(true));
      EXPECT_EQ(d->stopped_by_signal(), s.number);
    }
    FakeRanks both(2);
    both.signals = {s.number, SIGINT};
    both.end_step();
    EXPECT_TRUE(both.ranks[0]->act_on_signal_or_pause(true));
    EXPECT_EQ(both.ranks[0]->stopped_by_signal(), SIGINT);
  }
}

TEST(RunDecisions, AStopAskedInAValidationPassStopsEveryRankThere) {
  FakeRanks two(2);
  two.ranks[1]->request_stop();
  two.after_validation();
  EXPECT_TRUE(two.ranks[0]->stop_decided());
  EXPECT_TRUE(two.ranks[1]->stop_decided());
}

TEST(RunDecisions, TheSaveClockIsRankZerosAndRestartsAtASave) {
  FakeRanks two(2);
  for (auto& d : two.ranks) d->start(true, false, 0, 1e9);
  two.ranks[0]->start(true, true, /*auto_min=*/0, /*auto_max=*/1e9);
  EXPECT_TRUE(two.ranks[0]->mine().save_soon);
  EXPECT_FALSE(two.ranks[1]->mine().save_soon);  // only rank 0's clock counts
  two.end_step();
  EXPECT_TRUE(two.ranks[1]->save_soon());  // agreed
  EXPECT_FALSE(two.ranks[1]->save_now());
  two.ranks[1]->saved();
  EXPECT_FALSE(two.ranks[1]->save_soon());

  RunDecisions one;
  one.start(false, true, /*auto_min=*/3600, /*auto_max=*/7200);
  one.step_ended({});
  EXPECT_FALSE(one.save_soon());  // an hour has not passed
  one.start(false, false, 0, 1);  // not this process's clock
  one.step_ended({});
  EXPECT_FALSE(one.save_soon());
}

TEST(RunDecisions, StartForgetsTheLastFitsRequests) {
  FakeRanks one(1);
  one.ranks[0]->request_stop();
  one.ranks[0]->request_pause("budget");
  one.ranks[0]->act_on_signal_or_pause(true);
  one.ranks[0]->start(false, false, 0, 1);
  EXPECT_FALSE(one.ranks[0]->stop_decided());
  EXPECT_FALSE(one.ranks[0]->ended_early());
  EXPECT_FALSE(one.ranks[0]->act_on_signal_or_pause(true));
}

}  // namespace
}  // namespace unitrain
