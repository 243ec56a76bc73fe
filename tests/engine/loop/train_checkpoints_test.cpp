// TrainCheckpoints on its own (its entries saved and restored with the counters, no Trainer), and
// through the Trainer: a pause inside an accumulation window, a SIGTERM at a chosen step and
// async saves, each resumed or compared bit for bit.
#include "unitrain/engine/loop/train_checkpoints.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <filesystem>
#include <functional>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/file_image.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/loop/periods.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/loop/train_logs.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/run_logger.h"

namespace unitrain {
namespace {

Config window_config(const std::string& run_dir, const std::string& checkpoint) {
  return Config::from_string(
      "run_dir: " + run_dir +
      "\n"
      "optimizer: {type: adam, lr: 0.01}\n"
      "data: {loader: {batch_size: 8, workers: 0, shuffle: true}}\n"
      "log: {trackers: [jsonl]}\n"
      "train: {max_length: 3 epochs, accumulation_steps: 2, log_every: 3 steps}\n"
      "checkpoint: " +
      checkpoint + "\n");
}

/// Calls `act` once, after the micro-batch that leaves the run at `samples` samples.
struct AtSamples : Callback {
  int64_t samples;
  std::function<void(Trainer&)> act;
  AtSamples(int64_t s, std::function<void(Trainer&)> a) : samples(s), act(std::move(a)) {}
  void on_train_batch_end(Trainer& t, const Batch&, const MicroStep&) override {
    if (t.state().samples == samples) act(t);
  }
};

std::vector<torch::Tensor> train(const Config& config, FitResult* result = nullptr,
                                 std::shared_ptr<Callback> callback = nullptr) {
  Trainer trainer(config);
  if (callback) trainer.add_callback(callback);
  test::Regression module;
  const FitResult r = trainer.fit(module, test::regression_data(64));
  if (result) *result = r;
  std::vector<torch::Tensor> out;
  for (const auto& p : module.parameters()) out.push_back(p.detach().clone());
  return out;
}

void expect_same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << a[i] << b[i];
}

/// A program's note, saved as note.txt.
struct NoteEntry : CheckpointEntry {
  std::string text;
  void save(CheckpointWrite& out) override {
    if (out.writes) out.add("note.txt", text);
  }
  void restore(const CheckpointRead& in) override {
    const std::vector<char> bytes = in.read("note.txt");
    text.assign(bytes.begin(), bytes.end());
  }
};

TEST(TrainCheckpoints, OnItsOwnItSavesItsEntriesAndRestoresThemWithTheCounters) {
  register_builtins();
  const std::string dir = test::temp_dir();
  const Config config = resolve_run_config(window_config(dir, "{every: null}"));
  const RunSettings settings = RunSettings::from_config(config);
  RunPlan plan;
  plan.batch_size = 8;
  plan.batches_per_epoch = 4;
  LogOptions no_trackers;
  no_trackers.trackers.clear();
  TrainLogs logs(nullptr, 0);  // whose events a checkpoint records
  logs.open(std::make_unique<RunLogger>(no_trackers, dir, 0));
  const CheckpointSetup setup = CheckpointSetup::of(settings, config, plan, false, false);
  TrainState state;
  state.step = 3;
  state.batch_in_epoch = 3;
  state.samples = 24;
  {
    RunDecisions decisions;
    NoteEntry note;
    note.text = "kept";
    TrainCheckpoints checkpoints(setup, state, decisions, logs, nullptr);
    checkpoints.open();
    checkpoints.add(note);
    Periods periods(settings.train.log_every, settings.train.val_every, settings.checkpoint.every);
    periods.set_batches_per_epoch(plan.batches_per_epoch);
    checkpoints.save_if_due(periods);  // every: null: nothing due
    EXPECT_EQ(checkpoints.saves(), 0);
    checkpoints.save_if_due(periods, /*force=*/true);
    checkpoints.finish();
    EXPECT_EQ(checkpoints.saves(), 1);
    EXPECT_EQ(checkpoints.last_checkpoint(), dir + "/checkpoints/step-3");
  }
  TrainState restored;
  RunDecisions decisions;
  NoteEntry back;
  TrainCheckpoints checkpoints(setup, restored, decisions, logs, nullptr);
  checkpoints.open();
  checkpoints.add(back);
  const ResumePoint point = read_resume_point(dir + "/checkpoints/step-3", config);
  EXPECT_EQ(point.file.state.step, 3);  // the counters, which the loop sets from the point
  EXPECT_EQ(point.file.state.batch_in_epoch, 3);
  EXPECT_EQ(point.file.state.samples, 24);
  restored = point.file.state;
  checkpoints.restore(point, plan.batches_per_epoch, 0);
  EXPECT_EQ(back.text, "kept");
  EXPECT_EQ(checkpoints.rollback_point(), dir + "/checkpoints/step-3");
  // A checkpoint of a longer epoch than this run's is refused, naming both.
  const std::string message = test::config_error_of([&] { checkpoints.restore(point, 2, 0); });
  EXPECT_TRUE(test::contains(message, "it stopped at batch 3 of an epoch that now has 2 batches"))
      << message;
}

TEST(TrainCheckpoints, APauseInsideAWindowResumesBitForBit) {
  const auto straight = train(window_config(test::temp_dir(), "{every: null}"));
  const std::string dir = test::temp_dir();
  const Config config = window_config(dir, "{every: null}");
  FitResult paused;
  // 3 micro-batches of 8: the second window is half done.
  train(config, &paused,
        std::make_shared<AtSamples>(24, [](Trainer& t) { t.request_pause("test"); }));
  EXPECT_EQ(paused.paused, "test");
  EXPECT_EQ(paused.state.step, 1);
  EXPECT_EQ(paused.state.micro_in_window, 1);
  EXPECT_TRUE(CheckpointStore::has(paused.last_checkpoint, "grads.pt"));
  FitResult resumed;
  const auto after = train(config, &resumed);
  EXPECT_EQ(resumed.resumed_from, paused.last_checkpoint);
  EXPECT_EQ(resumed.state.step, 12);
  expect_same(after, straight);
}

TEST(TrainCheckpoints, ASigtermAtAChosenStepSavesStopsAndResumesBitForBit) {
  const auto straight = train(window_config(test::temp_dir(), "{every: null}"));
  const std::string dir = test::temp_dir();
  const Config config = window_config(dir, "{every: null}");
  FitResult stopped;
  train(config, &stopped, std::make_shared<AtSamples>(80, [](Trainer&) { std::raise(SIGTERM); }));
  EXPECT_EQ(stopped.signal, SIGTERM);
  EXPECT_EQ(stopped.exit_code, 75);  // checkpoint.on_signal.exit_code's default
  EXPECT_EQ(stopped.state.step, 5);  // the window of the signal ends first (one process: at once)
  EXPECT_EQ(stopped.checkpoints_saved, 1);
  const auto after = train(config);
  expect_same(after, straight);
}

TEST(TrainCheckpoints, ASigtermAfterTheLastStepStopsNothing) {
  const auto straight = train(window_config(test::temp_dir(), "{every: null}"));
  // Received at the last micro-batch's end (12 steps of 16 samples), before the epoch's end
  // and its last validation: training is complete, the run ends as it would have, its final
  // checkpoint saved, exit 0. (One micro-batch earlier it stops inside the last window.)
  FitResult ended;
  const auto after = train(window_config(test::temp_dir(), "{every: null}"), &ended,
                           std::make_shared<AtSamples>(192, [](Trainer&) { std::raise(SIGTERM); }));
  EXPECT_EQ(ended.signal, 0);
  EXPECT_EQ(ended.signal_after_end, SIGTERM);
  EXPECT_EQ(ended.exit_code, 0);
  EXPECT_EQ(ended.state.step, 12);
  EXPECT_EQ(ended.checkpoints_saved, 1);
  EXPECT_FALSE(ended.stopped);
  expect_same(after, straight);
}

TEST(TrainCheckpoints, OnSignalChoosesTheSignalsThatSaveAndTheExitCode) {
  const Config config =
      window_config(test::temp_dir(), "{every: null, on_signal: {signals: [USR2], exit_code: 99}}");
  FitResult stopped;
  train(config, &stopped, std::make_shared<AtSamples>(80, [](Trainer&) { std::raise(SIGUSR2); }));
  EXPECT_EQ(stopped.signal, SIGUSR2);
  EXPECT_EQ(stopped.exit_code, 99);
  EXPECT_EQ(stopped.checkpoints_saved, 1);

  const Config off = window_config(test::temp_dir(), "{enabled: false}");
  train(off, &stopped, std::make_shared<AtSamples>(80, [](Trainer&) { std::raise(SIGUSR1); }));
  EXPECT_EQ(stopped.signal, SIGUSR1);
  EXPECT_EQ(stopped.exit_code, 128 + SIGUSR1);  // nothing saved: not "resume me"
}

TEST(TrainCheckpoints, AsyncSavesWriteTheSameBytesAsSynchronousOnes) {
  const std::string sync_dir = test::temp_dir(), async_dir = test::temp_dir();
  train(window_config(sync_dir, "{every: 2 steps, async: false, keep_last: 0}"));
  train(window_config(async_dir, "{every: 2 steps, async: true, keep_last: 0}"));
  // The optimizer's state as one writer serialises it (the async snapshot pickles the same
  // values with another memo layout).
  auto optimizer_state = [](const std::string& file) {
    test::Regression m;
    torch::optim::Adam adam(m.parameters(), torch::optim::AdamOptions(0.01));
    load_optimizer_state(adam, read_file(file), file);
    return save_optimizer_state(adam);
  };
  for (int step = 2; step <= 12; step += 2) {
    const std::string folder = "/checkpoints/step-" + std::to_string(step) + "/";
    for (const char* file : {"model.pt", "rng-rank-0.pt", "grads.pt"}) {
      EXPECT_EQ(std::filesystem::exists(sync_dir + folder + file),
                std::filesystem::exists(async_dir + folder + file));
      if (!std::filesystem::exists(sync_dir + folder + file)) continue;
      EXPECT_EQ(read_file(sync_dir + folder + file), read_file(async_dir + folder + file))
          << folder << file;
    }
    EXPECT_EQ(optimizer_state(sync_dir + folder + "optimizer.pt"),
              optimizer_state(async_dir + folder + "optimizer.pt"))
        << folder;
  }
}

}  // namespace
}  // namespace unitrain

namespace unitrain {
namespace {

/// A program's own state: a counter saved as cursor.txt.
struct CursorEntry : CheckpointEntry {
  int64_t cursor = 0;
  std::string file = "cursor.txt";
  void save(CheckpointWrite& out) override {
    if (out.writes) out.add(file, std::to_string(cursor));
  }
  void restore(const CheckpointRead& in) override {
    const std::vector<char> b = in.read(file);
    cursor = std::stoll(std::string(b.begin(), b.end()));
  }
};

TEST(TrainCheckpoints, AProgramsOwnEntryIsSavedAndRestored) {
  const std::string dir = test::temp_dir();
  const Config config = window_config(dir, "{every: null}");
  auto saved = std::make_shared<CursorEntry>();
  saved->cursor = 77;
  {
    Trainer trainer(config);
    trainer.add_checkpoint_entry(saved);
    test::Regression module;
    trainer.add_callback(std::make_shared<AtSamples>(40, [](Trainer& t) { t.request_pause("x"); }));
    trainer.fit(module, test::regression_data(64));
  }
  auto restored = std::make_shared<CursorEntry>();
  Trainer trainer(config);
  trainer.add_checkpoint_entry(restored);
  test::Regression module;
  trainer.fit(module, test::regression_data(64));
  EXPECT_EQ(restored->cursor, 77);
}

TEST(TrainCheckpoints, TwoEntriesWritingOneFileAreAnError) {
  // Found at the first save: an entry that does not declare its files.
  Trainer trainer(window_config(test::temp_dir(), "{every: null}"));
  auto clash = std::make_shared<CursorEntry>();
  clash->file = "model.pt";
  trainer.add_checkpoint_entry(clash);
  test::Regression module;
  EXPECT_TRUE(test::contains(
      test::error_of<TrainError>([&] { trainer.fit(module, test::regression_data(64)); }),
      "two checkpoint entries write the file 'model.pt'"));
}

/// A CursorEntry that declares its file.
struct DeclaredCursor : CursorEntry {
  std::vector<std::string> files() const override { return {file}; }
};

TEST(TrainCheckpoints, AFileAnEntryDeclaresIsRefusedAtTheStartWhenAnotherWritesIt) {
  for (const auto& [first, second] : {std::pair<std::string, std::string>{"model.pt", ""},
                                      {"rng-rank-0.pt", ""},
                                      {"cursor.txt", "cursor.txt"}}) {
    const std::string dir = test::temp_dir() + "/run";
    Trainer trainer(window_config(dir, "{every: null}"));
    auto one = std::make_shared<DeclaredCursor>();
    one->file = first;
    trainer.add_checkpoint_entry(one);
    if (!second.empty()) {
      auto two = std::make_shared<DeclaredCursor>();
      two->file = second;
      trainer.add_checkpoint_entry(two);
    }
    test::Regression module;
    EXPECT_TRUE(test::contains(
        test::error_of<ConfigError>([&] { trainer.fit(module, test::regression_data(64)); }),
        "two checkpoint entries write the file '" + first + "'"));
    EXPECT_FALSE(std::filesystem::exists(dir)) << first;  // refused before the folder was made
  }
}

}  // namespace
}  // namespace unitrain
