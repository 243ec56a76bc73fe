// The tracker registry, LogOptions' tracker checks and RunLogger's fan-out.
#include "unitrain/log/run_logger.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"

namespace unitrain {
namespace {

/// The `log` section of a run config, resolved (defaults filled in, trackers checked).
Config log_section(const std::string& yaml) {
  register_builtins();
  Config c = LogOptions::schema()->resolve(Config(Config::from_string(yaml).node(), "log"));
  LogOptions::resolve_trackers(c);
  return c;
}

/// What a test tracker was told, shared with the test.
struct Calls {
  RunInfo run;
  std::vector<int64_t> steps;
  int progress = 0;
  RunEnd end;
  int finished = 0;
  std::string greeting;
};
Calls g_calls;

class RecordingTracker : public Tracker {
 public:
  explicit RecordingTracker(std::string greeting) { g_calls.greeting = std::move(greeting); }
  void start(const RunInfo& run) override { g_calls.run = run; }
  void log(const LogEvent& e) override { g_calls.steps.push_back(e.step); }
  void progress(int64_t, int64_t, int64_t, const LossReader&) override { ++g_calls.progress; }
  void finish(const RunEnd& end) override {
    g_calls.end = end;
    ++g_calls.finished;
  }
};

void register_recording_tracker() {
  register_builtins();
  if (tracker_registry().contains("test_recorder")) return;
  Schema args;
  args.add("greeting", Type::String).def("hello").help("a setting");
  tracker_registry().add("test_recorder", "records calls (unit tests)", std::move(args),
                         [](const Config& a, const LogOptions&) -> TrackerPtr {
                           return std::make_unique<RecordingTracker>(a.get_string("greeting"));
                         });
}

TEST(TrackerRegistry, HasTheBuiltIns) {
  register_builtins();
  for (const char* name : {"console", "jsonl", "csv", "tensorboard"}) {
    EXPECT_TRUE(tracker_registry().contains(name)) << name;
  }
}

TEST(LogOptions, DefaultsAndTrackerArgs) {
  const LogOptions o = LogOptions::from_config(log_section("{}"));
  EXPECT_EQ(o.trackers, (std::vector<std::string>{"console", "jsonl", "csv"}));
  EXPECT_FALSE(o.all_ranks);
  EXPECT_TRUE(o.tracker_args.empty());  // none of these has settings
  const LogOptions tb = LogOptions::from_config(
      log_section("{trackers: [tensorboard], tracker_args: {tensorboard: {hparams: [seed]}}}"));
  EXPECT_EQ(tb.tracker_args.at("tensorboard").get_string_list("hparams"),
            std::vector<std::string>{"seed"});
  const LogOptions tb_default = LogOptions::from_config(log_section("{trackers: [tensorboard]}"));
  EXPECT_EQ(tb_default.tracker_args.at("tensorboard").get_string_list("hparams").size(), 6u);
}

TEST(LogOptions, UnknownTrackerSuggestsTheName) {
  const std::string m =
      test::error_of<ConfigError>([] { log_section("{trackers: [console, tensorbord]}"); });
  EXPECT_TRUE(test::contains(m, "log.trackers[1]")) << m;
  EXPECT_TRUE(test::contains(m, "did you mean 'tensorboard'")) << m;
  EXPECT_TRUE(test::contains(m, "jsonl")) << m;  // the registered names
}

TEST(LogOptions, BadTrackerArgsNameTheKey) {
  std::string m = test::error_of<ConfigError>(
      [] { log_section("{trackers: [tensorboard], tracker_args: {tensorboard: {hparam: []}}}"); });
  EXPECT_TRUE(test::contains(m, "log.tracker_args.tensorboard.hparam")) << m;
  m = test::error_of<ConfigError>(
      [] { log_section("{trackers: [console], tracker_args: {tensorboard: {}}}"); });
  EXPECT_TRUE(test::contains(m, "log.tracker_args.tensorboard")) << m;
  EXPECT_TRUE(test::contains(m, "does not list")) << m;
  m = test::error_of<ConfigError>([] { log_section("{trackers: [csv, csv]}"); });
  EXPECT_TRUE(test::contains(m, "listed twice")) << m;
}

TEST(LogOptions, RankDir) {
  LogOptions o;
  EXPECT_EQ(o.rank_dir("runs/a", 0), "runs/a");
  EXPECT_EQ(o.rank_dir("runs/a", 1), "");
  EXPECT_EQ(o.rank_dir("", 0), "");
  o.all_ranks = true;
  EXPECT_EQ(o.rank_dir("runs/a", 0), "runs/a");
  EXPECT_EQ(o.rank_dir("runs/a", 3), "runs/a/logs/rank-3");
}

TEST(RunLogger, PluginTrackerGetsTheRunAndFinalMetrics) {
  register_recording_tracker();
  g_calls = Calls();
  const LogOptions o = LogOptions::from_config(
      log_section("{trackers: [test_recorder], tracker_args: {test_recorder: {greeting: hi}}}"));
  RunInfo run;
  run.config_yaml = "seed: 1\n";
  run.dir = test::temp_dir() + "/rank-dir";
  run.rank = 2;
  run.first_step = 11;
  run.keep_events = 4;
  {
    RunLogger logger(o, run);
    EXPECT_EQ(g_calls.greeting, "hi");
    EXPECT_EQ(g_calls.run.config_yaml, "seed: 1\n");
    EXPECT_EQ(g_calls.run.first_step, 11);
    EXPECT_TRUE(std::filesystem::is_directory(run.dir));  // made for the trackers
    logger.log({12, 1, 100, 1.0, {{"train/loss", 2.0}, {"train/lr", 0.1}}});
    logger.log({14, 1, 120, 2.0, {{"train/loss", 1.5}}});
    logger.progress(14, 20, 1, [] { return 1.5; });
    EXPECT_EQ(logger.events(), 6);  // 4 kept + 2
    logger.finish(false);
    logger.finish(true);  // once only
  }
  EXPECT_EQ(g_calls.steps, (std::vector<int64_t>{12, 14}));
  EXPECT_EQ(g_calls.progress, 1);
  EXPECT_EQ(g_calls.finished, 1);
  EXPECT_FALSE(g_calls.end.completed);
  EXPECT_EQ(g_calls.end.final_metrics,
            (std::map<std::string, double>{{"train/loss", 1.5}, {"train/lr", 0.1}}));
}

TEST(RunLogger, FileTrackersWriteIntoTheRunDir) {
  const std::string dir = test::temp_dir();
  {
    RunLogger logger(LogOptions::from_config(log_section("{trackers: [jsonl, csv]}")), dir);
    logger.log({5, 0, 50, 0.5, {{"train/loss", 0.25}}});
    logger.finish();
  }
  std::ifstream jsonl(dir + "/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(jsonl, line));
  EXPECT_TRUE(test::contains(line, "\"train/loss\":0.25")) << line;
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics.csv"));
  // No folder: the file trackers write nothing.
  RunLogger quiet(LogOptions::from_config(log_section("{trackers: [jsonl]}")), "");
  quiet.log({1, 0, 1, 0, {{"x", 1}}});
}

}  // namespace
}  // namespace unitrain
