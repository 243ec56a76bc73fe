#include "unitrain/sweep/asha_schedule.h"

#include <gtest/gtest.h>

#include <map>

namespace unitrain {
namespace {

/// Runs the schedule one job at a time to its end over synthetic results: trial k's metric at
/// rung i is `metric(k, i)`. Returns the jobs in order.
std::vector<SweepJob> play(const AshaSchedule& schedule, double (*metric)(int64_t, int),
                           int rungs) {
  std::vector<TrialRecord> trials;
  std::vector<SweepJob> jobs;
  while (auto job = schedule.next(trials)) {
    jobs.push_back(*job);
    if (job->trial == static_cast<int64_t>(trials.size())) {
      trials.emplace_back();
      trials.back().index = job->trial;
    }
    TrialRecord& t = trials[job->trial];
    EXPECT_EQ(t.rung() + 1, job->rung) << "a job trains the next rung only";
    t.rung_metrics.push_back(metric(job->trial, job->rung));
    t.status = job->rung + 1 == rungs ? TrialStatus::Finished : TrialStatus::Stopped;
  }
  return jobs;
}

TEST(AshaRungs, GrowByTheReductionFactorUpToMax) {
  const auto rungs = asha_rungs(TrainUnit::epochs(1), TrainUnit::epochs(9), 3);
  ASSERT_EQ(rungs.size(), 3u);
  EXPECT_EQ(rungs[0], TrainUnit::epochs(1));
  EXPECT_EQ(rungs[1], TrainUnit::epochs(3));
  EXPECT_EQ(rungs[2], TrainUnit::epochs(9));
  const auto steps = asha_rungs(TrainUnit::steps(100), TrainUnit::steps(500), 3);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[2], TrainUnit::steps(500));
  EXPECT_EQ(asha_rungs(TrainUnit::steps(5), TrainUnit::steps(5), 3).size(), 1u);
}

TEST(AshaSchedule, OneRungRunsTheTrialsInOrder) {
  const AshaSchedule s(1, 3, false, 4);
  const auto jobs = play(
      s, [](int64_t k, int) { return double(k); }, 1);
  EXPECT_EQ(jobs, (std::vector<SweepJob>{{0, 0}, {1, 0}, {2, 0}, {3, 0}}));
}

TEST(AshaSchedule, PromotesTheTopThirdAsResultsArrive) {
  // Lower is better; trial k's metric is k at every rung: earlier trials are better.
  const AshaSchedule s(3, 3, false, 9);
  const auto jobs = play(
      s, [](int64_t k, int) { return double(k); }, 3);
  // Trial 0 goes on once it is the best third of three results, trial 1 once it is among the
  // best two of six, trial 2 among the best three of nine; then trial 0, the best of three at
  // rung 1, goes on to rung 2.
  EXPECT_EQ(jobs, (std::vector<SweepJob>{{0, 0},
                                         {1, 0},
                                         {2, 0},
                                         {0, 1},
                                         {3, 0},
                                         {4, 0},
                                         {5, 0},
                                         {1, 1},
                                         {6, 0},
                                         {7, 0},
                                         {8, 0},
                                         {2, 1},
                                         {0, 2}}));
}

TEST(AshaSchedule, HigherIsBetterAndTiesGoToTheLowerIndex) {
  const AshaSchedule s(2, 2, true, 4);
  const auto jobs = play(
      s, [](int64_t, int) { return 0.5; }, 2);
  // All equal: after two results the lower index is the best half; then trial 1 after four.
  EXPECT_EQ(jobs, (std::vector<SweepJob>{{0, 0}, {1, 0}, {0, 1}, {2, 0}, {3, 0}, {1, 1}}));
}

TEST(AshaSchedule, TheSameResultsGiveTheSameJobs) {
  const AshaSchedule s(3, 3, true, 16);
  auto metric = [](int64_t k, int rung) { return double((k * 7919) % 13) + rung; };
  EXPECT_EQ(play(s, metric, 3), play(s, metric, 3));
}

TEST(AshaSchedule, RunningAndFailedTrialsAreNotPromoted) {
  const AshaSchedule s(2, 2, true, 2);
  std::vector<TrialRecord> trials(2);
  trials[0].index = 0;
  trials[0].rung_metrics = {0.9};
  trials[0].status = TrialStatus::Failed;
  trials[1].index = 1;
  trials[1].rung_metrics = {0.1};
  trials[1].status = TrialStatus::Stopped;
  EXPECT_FALSE(s.next(trials).has_value());  // trial 0 is the best half, but failed
  trials[0].status = TrialStatus::Stopped;
  EXPECT_EQ(*s.next(trials), (SweepJob{0, 1}));
}

}  // namespace
}  // namespace unitrain
