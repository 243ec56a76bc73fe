// What a sweep reads of an ended job: its summary.json and its exit status.
#include "unitrain/sweep/job_outcome.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// A trial folder whose job left `summary` (JSON) as its results/summary.json.
std::string job_left(const std::string& summary) {
  const std::string dir = test::temp_dir() + "/trial-0";
  std::filesystem::create_directories(dir + "/results");
  test::write_file(dir + "/results/summary.json", summary);
  return dir;
}

/// The waitpid status of a child that exits with `code`, or is killed by `sig` when > 0.
int status_of(int code, int sig = 0) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (sig > 0) ::kill(::getpid(), sig);
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(JobOutcome, AFinishedJobsMetricAndSteps) {
  const std::string dir =
      job_left(R"({"status": "finished", "step": 46, "final": {"val": {"val/acc": 0.9}}})");
  const JobResult r = read_job_result(dir, "val/acc");
  EXPECT_EQ(r.metric, 0.9);
  EXPECT_EQ(r.steps, 46);
  EXPECT_FALSE(r.stopped_early);
  EXPECT_EQ(steps_done(dir), 46);
  const std::string m = test::config_error_of([&] { read_job_result(dir, "val/f1"); });
  EXPECT_TRUE(test::contains(m, "does not report 'val/f1'; it reports: val/acc")) << m;
  EXPECT_EQ(read_pause(dir, "val/acc"), std::nullopt);  // not paused
}

TEST(JobOutcome, ADivergedJobsMetricIsReadAsItsNotANumber) {
  // Reported, but not a number (the trial diverged): not "does not report" (the sweep marks the
  // trial failed and goes on).
  const std::string dir =
      job_left(R"({"status": "finished", "step": 12, "final": {"val": {"val/loss": "NaN"}}})");
  const JobResult r = read_job_result(dir, "val/loss");
  EXPECT_TRUE(std::isnan(r.metric));
  EXPECT_EQ(r.steps, 12);
  const std::string inf =
      job_left(R"({"status": "finished", "step": 3, "final": {"val": {"val/loss": "Infinity"}}})");
  EXPECT_TRUE(std::isinf(read_job_result(inf, "val/loss").metric));
}

TEST(JobOutcome, AJobStoppedEarlySaysWhereItStopped) {
  const std::string dir = job_left(R"({"status": "stopped early", "step": 161, "epoch": 7, )"
                                   R"("final": {"val": {"val/acc": 0.8}}})");
  const JobResult r = read_job_result(dir, "val/acc");
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.steps, 161);
  EXPECT_EQ(r.epochs, 7);
  EXPECT_EQ(read_pause(dir, "val/acc"), std::nullopt);
}

TEST(JobOutcome, APausedJobIsCheckedForTheMetricOnceItValidated) {
  std::string dir = job_left(R"({"status": "paused: timer", "step": 20, "final": {"val": {}}})");
  EXPECT_EQ(read_pause(dir, "val/f1"), std::make_pair(std::string("timer"), int64_t(20)));
  dir = job_left(R"({"status": "paused: timer", "step": 30, "final": {"val": {"val/acc": 0.5}}})");
  EXPECT_EQ(read_pause(dir, "val/acc"), std::make_pair(std::string("timer"), int64_t(30)));
  const std::string m = test::config_error_of([&] { read_pause(dir, "val/f1"); });
  EXPECT_TRUE(test::contains(m, "does not report 'val/f1'; it reports: val/acc")) << m;
}

TEST(JobOutcome, StepsOfAJobThatLeftNothingOrSomethingElse) {
  EXPECT_EQ(steps_done(test::temp_dir() + "/none"), 0);
  EXPECT_EQ(steps_done(job_left("not json")), 0);
  EXPECT_EQ(read_pause(job_left("not json"), "val/acc"), std::nullopt);
}

TEST(JobOutcome, AFinishedJobWithoutASummaryIsATrainErrorNamingTheFile) {
  const std::string dir = job_left("not json");
  const std::string m = test::error_of<TrainError>([&] { read_job_result(dir, "val/acc"); });
  EXPECT_TRUE(test::contains(m, dir + "/results/summary.json is not a run summary")) << m;
  const std::string none = test::temp_dir() + "/trial-1";
  const std::string missing = test::error_of<TrainError>([&] { read_job_result(none, "val/acc"); });
  EXPECT_TRUE(test::contains(missing, none + "/results/summary.json: missing")) << missing;
}

TEST(JobOutcome, EndsBySignalAsALauncherOrAShellReportsThem) {
  EXPECT_TRUE(ended_by_signal(status_of(0, SIGKILL), 75));  // killed itself
  EXPECT_TRUE(ended_by_signal(status_of(75), 75));          // saved on a signal
  EXPECT_TRUE(ended_by_signal(status_of(128 + SIGTERM), 75));
  EXPECT_TRUE(ended_by_signal(status_of(128 + SIGKILL), 75));  // a launcher's worker killed
  EXPECT_FALSE(ended_by_signal(status_of(0), 75));
  EXPECT_FALSE(ended_by_signal(status_of(1), 75));
  EXPECT_FALSE(ended_by_signal(status_of(2), 75));
}

}  // namespace
}  // namespace unitrain
