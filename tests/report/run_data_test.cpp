#include "unitrain/report/run_data.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/report/report_sections.h"

namespace unitrain::report {
namespace {

std::string fixture_run(const std::string& name) {
  return test::source_dir() + "/tests/report/fixture/" + name;
}

bool any_note_has(const RunData& run, const std::string& text) {
  for (const auto& n : run.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(RunData, ReadsEveryFileOfAFinishedRun) {
  const RunData run = read_run(fixture_run("run-a"));
  EXPECT_EQ(run.label, "fixture-a");
  ASSERT_EQ(run.events.size(), 6u);
  EXPECT_EQ(run.events[2].step, 2);
  EXPECT_DOUBLE_EQ(run.events[2].time, 1.5);
  EXPECT_DOUBLE_EQ(run.events[2].values.at("val/acc"), 0.625);
  EXPECT_TRUE(std::isnan(run.events[3].values.at("train/acc")));  // "NaN" in the file
  EXPECT_TRUE(std::isinf(run.events[3].values.at("train/loss")));
  EXPECT_EQ(run.status, "finished");
  EXPECT_TRUE(run.has_summary);
  EXPECT_DOUBLE_EQ(run.seconds, 2.5);
  EXPECT_EQ(run.step, 4);
  EXPECT_EQ(run.samples, 256);
  EXPECT_EQ(run.world_size, 1);
  EXPECT_EQ(run.threads, "2");
  EXPECT_EQ(run.reader_threads, "0");
  EXPECT_EQ(run.blas, "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so");
  EXPECT_EQ(run.peak_rss, "173 MB");
  EXPECT_EQ(run.peak_device_memory, "");  // trained on the CPU
  EXPECT_EQ(run.best_metric, "val/acc");
  EXPECT_EQ(run.best_value, 0.625);
  EXPECT_DOUBLE_EQ(run.test_metrics.at("test/loss"), 1.1875);
  EXPECT_EQ(run.config.front(), (std::pair<std::string, std::string>{"name", "fixture-a"}));
  EXPECT_TRUE(run.notes.empty()) << run.notes.front();
  const auto last = last_values(run.events);
  EXPECT_DOUBLE_EQ(last.at("val/acc"), 0.5);
  EXPECT_DOUBLE_EQ(last.at("train/lr"), 0.0005);
}

TEST(RunData, CheckpointsWithTheirLinksAndMetrics) {
  const RunData run = read_run(fixture_run("run-a"));
  ASSERT_EQ(run.checkpoints.size(), 2u);
  const CheckpointInfo& first = run.checkpoints[0];
  EXPECT_EQ(first.name, "step-2");
  EXPECT_EQ(first.step, 2);
  EXPECT_EQ(first.samples, 128);
  EXPECT_TRUE(first.complete);
  EXPECT_TRUE(first.best);
  EXPECT_FALSE(first.last);
  EXPECT_DOUBLE_EQ(first.metrics.at("val/acc"), 0.625);
  EXPECT_TRUE(std::isnan(first.metrics.at("train/lr")));  // "nan" in trainer_state.json
  EXPECT_TRUE(run.checkpoints[1].last);
  EXPECT_EQ(run.checkpoints[1].epoch, 1);
}

TEST(RunData, ProfileSummaryIsRead) {
  const RunData run = read_run(fixture_run("run-a"));
  ASSERT_TRUE(run.profile.has_value());
  EXPECT_EQ(run.profile->steps, 4);
  ASSERT_EQ(run.profile->phases.size(), 4u);
  EXPECT_EQ(run.profile->phases[3].name, "optimizer <step>");
  EXPECT_DOUBLE_EQ(run.profile->phases[3].mean_ms, 25);  // derived: 0.1 s over 4 steps
}

TEST(RunData, ARunInProgressShowsWhatItHas) {
  const RunData run = read_run(fixture_run("run-b"));
  EXPECT_EQ(run.status, "unfinished");
  EXPECT_FALSE(run.has_summary);
  ASSERT_EQ(run.events.size(), 2u);  // the cut line in the middle and the one being written skipped
  EXPECT_EQ(run.step, 2);
  EXPECT_DOUBLE_EQ(run.seconds, 0.5);  // the last event's time
  EXPECT_TRUE(run.checkpoints.empty());
  EXPECT_FALSE(run.profile.has_value());
  EXPECT_TRUE(any_note_has(run, "2 line(s) are not JSON objects with a step (first: line 2)"));
  EXPECT_TRUE(any_note_has(run, "no results/summary.json"));
  EXPECT_TRUE(any_note_has(run, "no train.log"));
}

TEST(RunData, TheGenerateCallbacksSamplesAreReadAndShown) {
  const std::string dir = test::temp_dir() + "/samples";
  test::write_file(dir + "/config.yaml", "name: s\n");
  test::write_file(dir + "/metrics.jsonl", "{\"step\":4,\"train/loss\":1}\n");
  test::write_file(dir + "/samples.jsonl",
                   "{\"step\":4,\"epoch\":0,\"prompt\":\"a <b>\",\"completion\":\"before\"}\n"
                   "{\"step\":8}\n"
                   // a resumed run generated again at step 4: the later line holds
                   "{\"step\":4,\"epoch\":0,\"prompt\":\"a <b>\",\"completion\":\"c & d\"}\n");
  std::vector<RunData> runs{read_run(dir)};
  ASSERT_EQ(runs[0].generated.size(), 1u);
  EXPECT_EQ(runs[0].generated[0].step, 4);
  EXPECT_EQ(runs[0].generated[0].completion, "c & d");
  EXPECT_TRUE(any_note_has(runs[0], "samples.jsonl line 2 is not a sample"));
  const std::string html = samples_section(runs);
  EXPECT_NE(html.find("a &lt;b&gt;"), std::string::npos) << html;
  EXPECT_NE(html.find("<pre>c &amp; d</pre>"), std::string::npos) << html;
  runs[0].generated.clear();
  EXPECT_EQ(samples_section(runs), "");
}

TEST(RunData, OnlyTheLineBeingWrittenIsNoNote) {
  const std::string dir = test::temp_dir() + "/writing";
  test::write_file(dir + "/config.yaml", "name: w\n");
  test::write_file(dir + "/metrics.jsonl", "{\"step\":1,\"train/loss\":1}\n{\"step\":2,\"tr");
  const RunData run = read_run(dir);
  EXPECT_EQ(run.events.size(), 1u);
  EXPECT_FALSE(any_note_has(run, "not JSON"));
}

TEST(RunData, TheLastDoneLineGivesAGpusPeakMemory) {
  const std::string dir = test::temp_dir() + "/gpu";
  test::write_file(dir + "/config.yaml", "name: g\n");
  test::write_file(dir + "/metrics.jsonl", "{\"step\":1,\"train/loss\":1}\n");
  const std::string start =
      "[2026-01-01 10:00:00.000] [info] device: cuda:0 (NVIDIA H100 80GB "
      "HBM3, 79.1 GiB; 1 of 1 GPUs)\n";
  const std::string done =
      "[2026-01-01 10:00:02.600] [info] done: 4 steps, 1 epoch completed, "
      "256 samples in 2.5 s; waited 0.00 s for data; peak RSS 2173 MB";
  test::write_file(dir + "/train.log", start + done + "; peak cuda:0 memory 123 MB\n");
  RunData run = read_run(dir);
  EXPECT_EQ(run.peak_rss, "2173 MB");
  EXPECT_EQ(run.peak_device_memory, "123 MB (cuda:0)");
  // Resumed on the CPU: the last done line has no device peak, and neither has the run.
  test::write_file(dir + "/train.log",
                   start + done + "; peak cuda:0 memory 123 MB\n" + done + "\n");
  run = read_run(dir);
  EXPECT_EQ(run.peak_device_memory, "");
}

TEST(RunData, EachStartOfTheRunIsReadWithItsSettingsAndChanges) {
  // On 2 processes, resumed on 1 with another lr and 2 threads, then again with 1 thread.
  const std::string dir = test::temp_dir() + "/restarted";
  test::write_file(dir + "/config.yaml", "name: r\n");
  test::write_file(dir + "/metrics.jsonl", "{\"step\":1,\"train/loss\":1}\n");
  const auto line = [](const std::string& level, const std::string& text) {
    return "[2026-01-01 10:00:00.000] [" + level + "] " + text + "\n";
  };
  const auto training = [&](int accumulation, int threads) {
    return line("info", fmt::format("training: 1438 samples, 12 batches/epoch of 64, "
                                    "accumulation {}, 20 optimizer steps; precision fp32, threads "
                                    "{}, reader threads 0, BLAS libopenblas.so",
                                    accumulation, threads));
  };
  test::write_file(
      dir + "/train.log",
      line("info", "data parallel: rank 0 of 2 (torchrun via the file store /tmp/s, gloo)") +
          training(1, 1) +
          line("info", "resuming on 1 process(es) a checkpoint written by 2: the global batch") +
          line("warning",
               "config changed since the checkpoint: optimizer.lr: 1.0e-3 -> 2e-3 (it "
               "applies from step 21 on: the run trains otherwise than it would have)") +
          line("info", "config changed since the checkpoint: train.threads: 1 -> 2") +
          line("info",
               "resumed from runs/r/checkpoints/step-20: epoch 1, step 20, batch 16 of "
               "the epoch, 2462 samples seen") +
          training(2, 2) +
          line("info", "resumed from runs/r/checkpoints/step-40: epoch 3, step 40, batch 8") +
          training(1, 1));
  const RunData run = read_run(dir);
  ASSERT_EQ(run.starts.size(), 3u);
  EXPECT_EQ(run.starts[0].from_step, 0);
  EXPECT_EQ(run.starts[1].from_step, 20);
  EXPECT_EQ(run.starts[2].from_step, 40);
  EXPECT_EQ(run.starts[0].settings.front(),
            (std::pair<std::string, std::string>{"world size", "2"}));
  EXPECT_EQ(run.starts[1].settings.front(),
            (std::pair<std::string, std::string>{"world size", "1"}));
  EXPECT_EQ(run.starts[1].config_changes,
            (std::vector<std::string>{"optimizer.lr: 1.0e-3 -> 2e-3", "train.threads: 1 -> 2"}));
  EXPECT_TRUE(run.starts[2].config_changes.empty());
  EXPECT_EQ(run.threads, "1");  // the last start's
  // The Runs section shows each start's differing settings, not only the last start's.
  const std::string html = runs_section({run});
  EXPECT_TRUE(test::contains(html, "r: 3 starts")) << html;
  EXPECT_TRUE(test::contains(html,
                             "<th>start</th><th>from step</th><th>world size</th>"
                             "<th>accumulation</th><th>threads</th><th>config changed</th>"))
      << html;
  EXPECT_TRUE(test::contains(html,
                             "<td class=\"num\">2</td><td class=\"num\">20</td><td>1</td>"
                             "<td>2</td><td>2</td><td>optimizer.lr: 1.0e-3 -&gt; 2e-3; "
                             "train.threads: 1 -&gt; 2</td>"))
      << html;
  // One start (the fixture), or starts alike: no such table.
  EXPECT_FALSE(test::contains(runs_section({read_run(fixture_run("run-a"))}), "starts</h3>"));
}

TEST(RunData, AFolderThatIsNoRunIsNamed) {
  using test::error_of;
  const std::string dir = test::temp_dir() + "/half";
  test::write_file(dir + "/config.yaml", "name: x\n");
  std::string msg = error_of<ConfigError>([&] { read_run(dir); });
  EXPECT_NE(msg.find(dir + " is not a run folder: it has no metrics.jsonl"), std::string::npos)
      << msg;
  msg = error_of<ConfigError>([] { read_run("/nonexistent/run"); });
  EXPECT_NE(msg.find("/nonexistent/run is not a folder"), std::string::npos) << msg;
  test::write_file(dir + "/metrics.jsonl", "");
  test::write_file(dir + "/config.yaml", "name: [unclosed\n");
  msg = error_of<ConfigError>([&] { read_run(dir); });
  EXPECT_NE(msg.find("config.yaml"), std::string::npos) << msg;
}

TEST(RunData, RunsWithOneNameAreLabelledByFolder) {
  std::vector<RunData> runs(3);
  runs[0].label = runs[1].label = "digits";
  runs[2].label = "other";
  runs[0].dir = "a/digits";
  runs[1].dir = "b/digits";
  runs[2].dir = "c";
  label_runs(runs);
  EXPECT_EQ(runs[0].label, "a/digits");
  EXPECT_EQ(runs[1].label, "b/digits");
  EXPECT_EQ(runs[2].label, "other");
  std::vector<RunData> same(2);
  same[0].label = same[1].label = "x";
  same[0].dir = same[1].dir = "runs/x";
  label_runs(same);
  EXPECT_NE(same[0].label, same[1].label);
}

}  // namespace unitrain::report
