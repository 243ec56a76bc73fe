// How every command opens a trained run: its config from a YAML or its folder, a checkpoint
// chosen, the model built as the run built it and loaded.
#include "unitrain/commands/open_run.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "commands/tiny_run.h"
#include "test_util.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/commands/train_from_config.h"
#include "unitrain/core/error.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

TEST(ReadRunSource, ARunFolderIsTheConfigItTrainedWithInThatFolder) {
  const std::string start = test::temp_dir();
  const std::string folder = start + "/runs/tiny";
  fs::create_directories(folder);
  // As a run started in `start` with a relative run_dir keeps it.
  test::write_file(folder + "/config.yaml", test::tiny_run_yaml("runs/tiny"));
  register_builtins();
  const RunSource source = read_run_source(folder, {{"seed", "11"}});
  EXPECT_EQ(source.config.get_string("run_dir"), folder);  // wherever it is now
  EXPECT_EQ(source.config.get_int("seed"), 11);            // the overrides after the folder's
  // Its relative paths are from where it started, which is not here: said for errors.
  EXPECT_TRUE(test::contains(source.started_elsewhere, "was started in " + start))
      << source.started_elsewhere;
  const RunSource yaml = read_run_source(folder + "/config.yaml", {});
  EXPECT_EQ(yaml.config.get_string("run_dir"), "runs/tiny");
  EXPECT_EQ(yaml.started_elsewhere, "");
}

TEST(ReadRunSource, AFolderWithoutConfigYamlIsRefusedByName) {
  const std::string folder = test::temp_dir();
  const std::string e = test::config_error_of([&] { read_run_source(folder, {}); });
  EXPECT_TRUE(test::contains(e, folder + " is a folder without a config.yaml")) << e;
}

TEST(OpenRun, TheChosenCheckpointIsLoadedIntoTheModelTheRunBuilt) {
  const std::string run_dir = test::temp_dir() + "/run";
  const ConfigRunResult trained = train_from_config(test::loaded_run(test::tiny_run_yaml(run_dir)));
  // A YAML whose model differs: the run's own (its config.yaml) is built, and said.
  const OpenedRun run = open_run(test::loaded_run(test::tiny_run_yaml(run_dir, "[4, 5, 3]")),
                                 "last", "trained", "test");
  EXPECT_EQ(run.step, trained.fit.state.step);
  EXPECT_EQ(run.choice, "last");
  EXPECT_EQ(fs::path(run.dir).parent_path(), fs::path(run_dir) / "checkpoints");
  EXPECT_EQ(run.config.at("model").at("args").get_int_list("sizes"), (std::vector<int64_t>{4, 3}));
  ASSERT_NE(run.module, nullptr);
  ASSERT_NE(run.trainer, nullptr);
  const NamedTensors saved = read_model_state(run.dir);
  const auto params = run.module->weights().named_parameters();
  ASSERT_EQ(params.size(), saved.size());
  for (const auto& [name, tensor] : saved) {
    EXPECT_TRUE(torch::equal(params[name], tensor)) << name;
  }
}

TEST(OpenRun, ACheckpointPrunedAfterItWasChosenGivesWayToTheOneItsChoiceNamesNow) {
  const std::string run_dir = test::temp_dir() + "/run";
  const Config config = test::loaded_run(test::tiny_run_yaml(run_dir) +
                                         "checkpoint: {every: 2 steps, keep_last: 0}\n");
  train_from_config(config);
  ChosenCheckpoint chosen = choose_checkpoint(config, "last", "test");
  EXPECT_EQ(fs::path(chosen.dir).filename(), "step-4");
  // As a run training there meanwhile does: `last` moves on, the chosen one is pruned.
  const fs::path root = fs::path(run_dir) / "checkpoints";
  fs::remove(root / "last");
  fs::create_directory_symlink("step-2", root / "last");
  fs::remove_all(chosen.dir);
  const OpenedRun run = open_run(std::move(chosen), "trained");
  EXPECT_EQ(fs::path(run.dir).filename(), "step-2");
  EXPECT_EQ(run.step, 2);
}

TEST(OpenRun, AMissingCheckpointOrWeightsChoiceIsRefusedByName) {
  const std::string run_dir = test::temp_dir() + "/run";
  const Config config = test::loaded_run(test::tiny_run_yaml(run_dir));
  std::string e = test::config_error_of([&] { choose_checkpoint(config, "last", "eval"); });
  EXPECT_TRUE(test::contains(e, "--checkpoint")) << e;
  train_from_config(config);
  e = test::config_error_of([&] { open_run(config, "last", "best", "eval"); });
  EXPECT_TRUE(test::contains(e, "--weights best: give validated")) << e;
  e = test::config_error_of([&] { choose_checkpoint(config, "none", "eval"); });
  EXPECT_TRUE(test::contains(e, "--checkpoint none: give best, last or a checkpoint folder")) << e;
}

}  // namespace
}  // namespace unitrain
