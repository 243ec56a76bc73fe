// What the Trainer adds to results/summary.json after a fit's end: a failure that keeps what an
// earlier part wrote, test metrics (and results/test.json).
#include "unitrain/engine/results/summary_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/log/run_summary.h"

namespace unitrain {
namespace {

std::string summary_file_text(const std::string& dir) {
  std::ifstream in(dir + "/results/summary.json");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// `text` with its first `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

/// A run's summary as the trainer writes it at a fit's end.
RunSummary finished_summary(const std::string& dir) {
  RunSummary s;
  s.name = "demo";
  s.status = RunStatus::Finished;
  s.step = 40;
  s.epoch = 2;
  s.samples = 640;
  s.seconds = 1.23456;
  s.final_train = {{"train/loss", 0.5}};
  s.final_val = {{"val/loss", 0.25}};
  s.best_metric = "val/loss";
  s.best_value = 0.25;
  s.best_checkpoint = dir + "/checkpoints/step-40";
  s.last_checkpoint = dir + "/checkpoints/step-40";
  return s;
}

TEST(SummaryFile, AFailureChangesTheStatusAndCountersAndKeepsTheRest) {
  const std::string dir = test::temp_dir();
  finished_summary(dir).write(dir);
  const std::string before = summary_file_text(dir);
  TrainState later;
  later.step = 45;
  later.epoch = 2;
  later.samples = 640;
  write_failed_summary(dir, "other name", later, 2, "disk full");
  // The file's other bytes stay as they were, as when its keys were patched in place.
  std::string expected =
      replaced(before, R"("status": "finished")", R"("status": "failed: disk full")");
  expected = replaced(expected, R"("step": 40)", R"("step": 45)");
  expected = replaced(expected, R"("world_size": 1)", R"("world_size": 2)");
  EXPECT_EQ(summary_file_text(dir), expected);
  const auto s = RunSummary::read(dir);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->status, RunStatus::Failed);
  EXPECT_EQ(s->status_detail, "disk full");
  EXPECT_EQ(s->name, "demo");  // the earlier summary's
}

TEST(SummaryFile, AFailureBeforeAnySummaryWritesOneOfItsOwn) {
  const std::string dir = test::temp_dir();
  TrainState state;
  state.step = 3;
  write_failed_summary(dir, "demo", state, 1, "boom");
  const auto s = RunSummary::read(dir);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "demo");
  EXPECT_EQ(s->status_text(), "failed: boom");
  EXPECT_EQ(s->step, 3);
  // A file that is not a summary is replaced the same way.
  test::write_file(dir + "/results/summary.json", "not json");
  write_failed_summary(dir, "demo", state, 1, "boom");
  EXPECT_EQ(RunSummary::read(dir)->status, RunStatus::Failed);
}

TEST(SummaryFile, TestMetricsGoToTestJsonAndIntoTheSummary) {
  const std::string dir = test::temp_dir();
  // No summary yet: test.json alone.
  std::string path = write_test_results(dir, {{"test/loss", 0.3}}, 45, 100, "");
  EXPECT_FALSE(RunSummary::read(dir).has_value());
  finished_summary(dir).write(dir);
  const std::string before = summary_file_text(dir);
  path = write_test_results(dir, {{"test/loss", 0.3}}, 45, 100, "");
  EXPECT_EQ(path, dir + "/results/test.json");
  std::ifstream in(path);
  const nlohmann::json t = nlohmann::json::parse(in);
  EXPECT_EQ(t["split"], "test");
  EXPECT_EQ(t["examples"], 100);
  EXPECT_EQ(t["metrics"]["test/loss"], 0.3);
  // The summary gains "test" at its end; nothing else changes.
  EXPECT_EQ(summary_file_text(dir),
            replaced(before, "\n }\n}\n", "\n },\n \"test\": {\n  \"test/loss\": 0.3\n }\n}\n"));
  EXPECT_EQ(RunSummary::read(dir)->test->at("test/loss"), 0.3);
}

}  // namespace
}  // namespace unitrain
