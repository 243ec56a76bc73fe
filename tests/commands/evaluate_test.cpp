// `unitrain eval`'s pieces: a trained run's checkpoint evaluated on its test split.
#include "unitrain/commands/evaluate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands/tiny_run.h"
#include "test_util.h"
#include "unitrain/commands/train_from_config.h"

namespace unitrain {
namespace {

TEST(EvaluateCheckpoint, TheTestSplitGivesTheMetricsTrainingGaveAndAResultsFile) {
  const std::string run_dir = test::temp_dir() + "/run";
  const Config config = test::loaded_run(test::tiny_run_yaml(run_dir));
  const ConfigRunResult trained = train_from_config(config);
  const EvalResult r = evaluate_checkpoint(config, "last", "test", "trained");
  EXPECT_EQ(r.split, "test");
  EXPECT_EQ(r.step, trained.fit.state.step);
  // The same weights on the same data as the run's own test pass after training.
  ASSERT_TRUE(r.metrics.count("test/loss"));
  EXPECT_DOUBLE_EQ(r.metrics.at("test/loss"), trained.test.at("test/loss"));
  EXPECT_DOUBLE_EQ(r.metrics.at("test/accuracy"), trained.test.at("test/accuracy"));
  ASSERT_TRUE(r.classes.has_value());  // a classifier: its per-class results
  std::ifstream in(r.results_file);
  const nlohmann::json saved = nlohmann::json::parse(in);
  EXPECT_EQ(r.results_file, run_dir + "/results/test.json");
  EXPECT_EQ(saved["step"], r.step);
  EXPECT_EQ(saved["examples"], 16);
  EXPECT_DOUBLE_EQ(saved["metrics"]["test/loss"].get<double>(), r.metrics.at("test/loss"));
}

TEST(EvaluateCheckpoint, ASplitTheRunHasNotIsRefusedBeforeTheModelIsRead) {
  const std::string run_dir = test::temp_dir() + "/run";
  const Config config = test::loaded_run(test::tiny_run_yaml(run_dir));
  train_from_config(config);
  std::string e = test::config_error_of([&] { evaluate_checkpoint(config, "last", "val"); });
  EXPECT_TRUE(test::contains(e, "--split val: the config has no val data")) << e;
  e = test::config_error_of([&] { evaluate_checkpoint(config, "last", "train"); });
  EXPECT_TRUE(test::contains(e, "--split train: give val or test")) << e;
}

}  // namespace
}  // namespace unitrain
