// train_from_config: the config-driven run, then its test split; a stop signal that arrives
// once training is complete stops nothing but leaves the test split to the same command.
#include "unitrain/commands/train_from_config.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <mutex>

#include "tiny_run.h"
#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

/// Raises SIGTERM after optimizer step `step` (test_sigterm_at).
struct SigtermAt : Callback {
  struct Options {
    int64_t step = 1;
    static void declare(unitrain::Options<Options>& o) {
      o.field("step", &Options::step).min(1).help("the step after which SIGTERM is raised");
    }
  };
  explicit SigtermAt(Options o) : step(o.step) {}
  std::string name() const override { return "test_sigterm_at"; }
  void on_step_end(Trainer& trainer, const MetricMap&) override {
    if (trainer.state().step == step) std::raise(SIGTERM);
  }
  int64_t step;
};

std::string run_yaml(const std::string& dir, int64_t sigterm_at) {
  static std::once_flag once;
  std::call_once(once, [] {
    register_callback<SigtermAt, SigtermAt::Options>("test_sigterm_at", "raises SIGTERM (test)");
  });
  return test::tiny_run_yaml(dir) + "checkpoint: {enabled: true, every: null}\n" +
         (sigterm_at > 0 ? "callbacks: [{type: test_sigterm_at, args: {step: " +
                               std::to_string(sigterm_at) + "}}]\n"
                         : std::string());
}

TEST(TrainFromConfig, TrainsThenEvaluatesTheTestSplit) {
  const std::string dir = test::temp_dir();
  const ConfigRunResult r = train_from_config(test::loaded_run(run_yaml(dir, 0)));
  EXPECT_EQ(r.fit.exit_code, 0);
  EXPECT_EQ(r.fit.state.step, 4);  // 32 samples in batches of 8
  EXPECT_TRUE(r.test.count("test/accuracy"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/step-4"));
}

TEST(TrainFromConfig, ASigtermAfterTheLastStepLeavesTheTestSplitToTheSameCommand) {
  const std::string dir = test::temp_dir();
  const Config config = test::loaded_run(run_yaml(dir, 4));
  const ConfigRunResult stopped = train_from_config(config);
  EXPECT_EQ(stopped.fit.signal, 0);  // training was complete: nothing stopped
  EXPECT_EQ(stopped.fit.signal_after_end, SIGTERM);
  EXPECT_EQ(stopped.fit.state.step, 4);
  EXPECT_TRUE(stopped.test.empty());
  EXPECT_EQ(stopped.fit.exit_code, 75);  // "run the same command": it evaluates the test split
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/step-4"));
  const ConfigRunResult again = train_from_config(config);  // the same command
  EXPECT_TRUE(again.fit.already_complete);
  EXPECT_EQ(again.fit.exit_code, 0);
  EXPECT_TRUE(again.test.count("test/accuracy"));

  // Before the last step it stops the run, which the same command resumes.
  const std::string early = test::temp_dir();
  const ConfigRunResult mid = train_from_config(test::loaded_run(run_yaml(early, 2)));
  EXPECT_EQ(mid.fit.signal, SIGTERM);
  EXPECT_EQ(mid.fit.state.step, 2);
  EXPECT_EQ(mid.fit.exit_code, 75);
  EXPECT_TRUE(mid.test.empty());
}

}  // namespace
}  // namespace unitrain
