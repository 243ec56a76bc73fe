// results/summary.json and results/test.json on their own: what a run writes, a failure that
// keeps what an earlier part wrote, test metrics added.
#include "unitrain/engine/results/summary_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/engine/results/run_status.h"

namespace unitrain {
namespace {

nlohmann::json json_of(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(SummaryFile, SaysWhatTheRunDidAndKeepsItThroughAFailureAndATest) {
  const std::string dir = test::temp_dir();
  RunSummary s;
  s.name = "demo";
  s.status = "finished";
  s.state.step = 40;
  s.state.epoch = 2;
  s.state.samples = 640;
  s.seconds = 1.23456;
  s.final_train = {{"train/loss", 0.5}};
  s.final_val = {{"val/loss", 0.25}};
  s.best_metric = "val/loss";
  s.best_value = 0.25;
  s.best_checkpoint = dir + "/checkpoints/step-40";
  s.last_checkpoint = dir + "/checkpoints/step-40";
  write_run_summary(dir, s);
  nlohmann::json j = json_of(dir + "/results/summary.json");
  EXPECT_EQ(j["status"], "finished");
  EXPECT_EQ(j["step"], 40);
  EXPECT_EQ(j["seconds"], 1.235);
  EXPECT_EQ(j["final"]["val"]["val/loss"], 0.25);
  EXPECT_EQ(j["best"]["metric"], "val/loss");
  EXPECT_EQ(j["checkpoints"]["last"], dir + "/checkpoints/step-40");
  EXPECT_FALSE(j.contains("rollbacks"));  // written only when there were any
  // A later part fails: the status and counters change, the rest stays.
  TrainState later = s.state;
  later.step = 45;
  write_failed_summary(dir, "demo", later, 2, "disk full");
  j = json_of(dir + "/results/summary.json");
  EXPECT_EQ(j["status"], "failed: disk full");
  EXPECT_EQ(j["step"], 45);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["best"]["metric"], "val/loss");
  // Test metrics: test.json, and summary.json's "test".
  const std::string path = write_test_results(dir, {{"test/loss", 0.3}}, 45, 100, "");
  EXPECT_EQ(path, dir + "/results/test.json");
  const nlohmann::json t = json_of(path);
  EXPECT_EQ(t["split"], "test");
  EXPECT_EQ(t["examples"], 100);
  EXPECT_EQ(t["metrics"]["test/loss"], 0.3);
  EXPECT_EQ(json_of(dir + "/results/summary.json")["test"]["test/loss"], 0.3);
}

TEST(SummaryFile, AFailureBeforeAnySummaryWritesOneOfItsOwn) {
  const std::string dir = test::temp_dir();
  TrainState state;
  state.step = 3;
  write_failed_summary(dir, "demo", state, 1, "boom");
  const nlohmann::json j = json_of(dir + "/results/summary.json");
  EXPECT_EQ(j["name"], "demo");
  EXPECT_EQ(j["status"], "failed: boom");
  EXPECT_EQ(j["step"], 3);
}

TEST(RunStatus, EachStatusTextReadsBackAsWhatHappened) {
  for (const RunStatus st :
       {RunStatus::Finished, RunStatus::StoppedEarly, RunStatus::Paused, RunStatus::Failed}) {
    const StatusText read = parse_run_status(run_status_text(st, "why"));
    EXPECT_EQ(read.status, st) << read.text;
    EXPECT_EQ(read.resumable, st == RunStatus::Paused) << read.text;
  }
  EXPECT_EQ(parse_run_status("stopped early").text, "stopped early");
  EXPECT_EQ(parse_run_status("paused: timer").detail, "timer");
  EXPECT_EQ(parse_run_status("failed: disk full").detail, "disk full");
  const StatusText signal = parse_run_status(
      "stopped by SIGTERM: checkpoint saved; exit 75 (checkpoint.on_signal.exit_code): run the "
      "same command to resume");
  EXPECT_EQ(signal.status, RunStatus::StoppedBySignal);
  EXPECT_TRUE(signal.resumable);
  EXPECT_FALSE(parse_run_status("stopped by SIGINT: checkpoint saved; exit 130").resumable);
  EXPECT_EQ(parse_run_status("finished!").status, RunStatus::Unknown);
}

TEST(RunStatus, ReadsTheSummarysStatusStepAndEpoch) {
  const std::string dir = test::temp_dir();
  EXPECT_FALSE(read_summary_status(dir).has_value());
  RunSummary s;
  s.status = run_status_text(RunStatus::StoppedEarly);
  s.state.step = 161;
  s.state.epoch = 7;
  write_run_summary(dir, s);
  const auto read = read_summary_status(dir);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->status.status, RunStatus::StoppedEarly);
  EXPECT_EQ(read->step, 161);
  EXPECT_EQ(read->epoch, 7);
  EXPECT_EQ(status_awaiting_resume(dir), "");
}

}  // namespace
}  // namespace unitrain
