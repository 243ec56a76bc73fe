// results/summary.json as one type: today's files read back and write the same bytes, each
// status by its enum, keys it does not know kept, a bad file named.
#include "unitrain/log/run_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

// What the trainer wrote before RunSummary was one type (write_run_summary, then
// write_test_results adding "test"), byte for byte: old run folders hold such files.
constexpr const char* kFinishedSummary = R"({
 "name": "demo",
 "status": "finished",
 "step": 40,
 "epoch": 2,
 "samples": 640,
 "skipped_steps": 1,
 "world_size": 2,
 "rollbacks": 3,
 "seconds": 12.346,
 "final": {
  "train": {
   "train/loss": 0.5,
   "train/lr": 0.001
  },
  "val": {
   "val/acc": "NaN",
   "val/loss": 0.25
  }
 },
 "best": {
  "metric": "val/loss",
  "value": 0.25,
  "checkpoint": "/runs/demo/checkpoints/step-40"
 },
 "checkpoints": {
  "last": "/runs/demo/checkpoints/step-40",
  "best": "/runs/demo/checkpoints/step-40",
  "resumed_from": "/runs/demo/checkpoints/step-20"
 },
 "test": {
  "test/acc": 0.875,
  "test/loss": "Infinity"
 }
}
)";

// A failure before any summary (write_failed_summary without an earlier one).
constexpr const char* kFailedSummary = R"({
 "name": "demo",
 "status": "failed: boom",
 "step": 3,
 "epoch": 0,
 "samples": 0,
 "skipped_steps": 0,
 "world_size": 1,
 "seconds": 0.0,
 "final": {
  "train": {},
  "val": {}
 },
 "checkpoints": {
  "last": "",
  "best": "",
  "resumed_from": ""
 }
}
)";

/// The summary of a file whose status is `status`.
RunSummary summary_with_status(const std::string& status) {
  return RunSummary::parse(R"({"status": ")" + status + R"("})", "s.json");
}

TEST(RunSummary, TodaysFilesReadBackAndWriteTheSameBytes) {
  const RunSummary s = RunSummary::parse(kFinishedSummary, "summary.json");
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.status, RunStatus::Finished);
  EXPECT_EQ(s.status_text(), "finished");
  EXPECT_EQ(s.step, 40);
  EXPECT_EQ(s.epoch, 2);
  EXPECT_EQ(s.samples, 640);
  EXPECT_EQ(s.skipped_steps, 1);
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.rollbacks, 3);
  EXPECT_EQ(s.seconds, 12.346);
  EXPECT_EQ(s.final_train.at("train/lr"), 0.001);
  EXPECT_TRUE(std::isnan(s.final_val.at("val/acc")));
  EXPECT_EQ(s.best_metric, "val/loss");
  EXPECT_EQ(s.best_value, 0.25);
  EXPECT_EQ(s.best_checkpoint, "/runs/demo/checkpoints/step-40");
  EXPECT_EQ(s.resumed_from, "/runs/demo/checkpoints/step-20");
  ASSERT_TRUE(s.test.has_value());
  EXPECT_TRUE(std::isinf(s.test->at("test/loss")));
  EXPECT_TRUE(s.other_keys.empty());
  EXPECT_EQ(s.to_json(), kFinishedSummary);
  EXPECT_EQ(RunSummary::parse(kFailedSummary, "summary.json").to_json(), kFailedSummary);
}

TEST(RunSummary, WritesAndReadsTheRunFoldersFile) {
  const std::string dir = test::temp_dir() + "/run";
  EXPECT_FALSE(RunSummary::read(dir).has_value());  // no summary yet
  RunSummary s = RunSummary::parse(kFinishedSummary, "summary.json");
  s.seconds = 1.23456;  // to the millisecond
  s.write(dir);
  std::ifstream in(dir + "/results/summary.json");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(text, s.to_json());
  EXPECT_TRUE(test::contains(text, "\"seconds\": 1.235,")) << text;
  const auto read = RunSummary::read(dir);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->seconds, 1.235);
  EXPECT_EQ(read->to_json(), text);
  EXPECT_EQ(RunSummary::path(dir), dir + "/results/summary.json");
}

TEST(RunSummary, EachStatusByItsEnum) {
  const RunSummary stopped = summary_with_status("stopped early");
  EXPECT_EQ(stopped.status, RunStatus::StoppedEarly);
  EXPECT_FALSE(stopped.resumable());
  // A pause's why follows its prefix, which alone tells it apart: "paused: ..." is not finished.
  const RunSummary paused = summary_with_status("paused: timer budget spent");
  EXPECT_EQ(paused.status, RunStatus::Paused);
  EXPECT_EQ(paused.status_detail, "timer budget spent");
  EXPECT_TRUE(paused.resumable());
  const RunSummary failed = summary_with_status("failed: disk full");
  EXPECT_EQ(failed.status, RunStatus::Failed);
  EXPECT_EQ(failed.status_detail, "disk full");
  EXPECT_FALSE(failed.resumable());
  const std::string saved =
      "stopped by SIGTERM: checkpoint saved; exit 75 (checkpoint.on_signal.exit_code): run the "
      "same command to resume";
  const RunSummary signal = summary_with_status(saved);
  EXPECT_EQ(signal.status, RunStatus::StoppedBySignal);
  EXPECT_EQ(signal.status_text(), saved);
  EXPECT_TRUE(signal.resumable());
  const RunSummary ctrl_c = summary_with_status("stopped by SIGINT: checkpoint saved; exit 130");
  EXPECT_EQ(ctrl_c.status, RunStatus::StoppedBySignal);
  EXPECT_FALSE(ctrl_c.resumable());
  const RunSummary other = summary_with_status("finished!");
  EXPECT_EQ(other.status, RunStatus::Unknown);
  EXPECT_EQ(other.status_text(), "finished!");
  // Each written status reads back as itself.
  for (const RunSummary& s : {stopped, paused, failed, signal, ctrl_c, other}) {
    const RunSummary again = RunSummary::parse(s.to_json(), "again.json");
    EXPECT_EQ(again.status, s.status) << s.status_text();
    EXPECT_EQ(again.status_text(), s.status_text());
  }
  EXPECT_EQ(run_status_text(RunStatus::Paused, "why"), "paused: why");
  EXPECT_EQ(run_status_text(RunStatus::Finished, "ignored"), "finished");
}

TEST(RunSummary, KeysItDoesNotKnowAreKeptAfterItsOwn) {
  RunSummary s = RunSummary::parse(
      R"({"zeta": {"b": 1, "a": [true, null]}, "status": "finished", "step": 5, "note": "x"})",
      "s.json");
  ASSERT_EQ(s.other_keys.size(), 2u);
  EXPECT_EQ(s.other_keys[0].first, "zeta");
  s.step = 6;
  const std::string text = s.to_json();
  EXPECT_TRUE(test::contains(text, R"(
 },
 "zeta": {
  "b": 1,
  "a": [
   true,
   null
  ]
 },
 "note": "x"
}
)")) << text;
  const RunSummary again = RunSummary::parse(text, "s.json");
  EXPECT_EQ(again.step, 6);
  EXPECT_EQ(again.other_keys, s.other_keys);
}

TEST(RunSummary, AnOlderFileWithoutSomeKeysReadsWithTheirDefaults) {
  const RunSummary s = RunSummary::parse(R"({"status": "finished", "step": 46})", "s.json");
  EXPECT_EQ(s.step, 46);
  EXPECT_EQ(s.world_size, 1);
  EXPECT_TRUE(s.final_val.empty());
  EXPECT_EQ(s.best_metric, "");
  EXPECT_TRUE(std::isnan(s.best_value));
  EXPECT_FALSE(s.test.has_value());
}

TEST(RunSummary, ABadFileIsATrainErrorNamingIt) {
  const auto error_of = [](const std::string& text) {
    return test::error_of<TrainError>([&] { RunSummary::parse(text, "run/results/summary.json"); });
  };
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "not a JSON object"},
           {"[1, 2]", "not a JSON object"},
           {R"({"step": 4})", "no `status` text"},
           {R"({"status": 3})", "no `status` text"},
           {R"({"status": "finished", "step": "4"})", "`step` is not a whole number"},
           {R"({"status": "finished", "final": []})", "`final` is not an object"},
           {R"({"status": "finished", "final": {"val": {"val/acc": "high"}}})",
            "`final.val.val/acc` is not a number"},
           {R"({"status": "finished", "best": {"value": true}})", "`best.value` is not a number"},
           {R"({"status": "finished", "checkpoints": {"last": 1}})",
            "`checkpoints.last` is not a text"}}) {
    const std::string m = error_of(text);
    EXPECT_TRUE(test::contains(m, "run/results/summary.json is not a run summary")) << m;
    EXPECT_TRUE(test::contains(m, says)) << m;
  }
  const std::string dir = test::temp_dir() + "/bad";
  test::write_file(dir + "/results/summary.json", "{");
  const std::string m = test::error_of<TrainError>([&] { RunSummary::read(dir); });
  EXPECT_TRUE(test::contains(m, dir + "/results/summary.json")) << m;
  EXPECT_FALSE(RunSummary::read_if_valid(dir).has_value());
}

}  // namespace
}  // namespace unitrain
