#include "unitrain/sweep/trial_configs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// A sweep over an inline base config (its data file is never read: only resolved).
SweepOptions sweep_of(
    const std::string& yaml,
    const std::string& data = "data: {train: {type: csv, args: {path: x.csv, target: y}}}, ") {
  return options_of<SweepOptions>().parse(Config::from_string(
      "name: s\nmetric: val/loss\nbase: {name: b, " + data +
      "optimizer: {type: sgd, lr: 0.1}, train: {max_length: 6 epochs, val_every: 4 epochs}}\n" +
      yaml));
}

std::string resolve_error(const SweepOptions& o) {
  const SearchSpace space = SearchSpace::from_config(o.space);
  try {
    TrialConfigs(o, space, 4).resolve(0, space.trial(o.seed, 0), 0);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrialConfigs, SetsFolderNameThreadsAndParameters) {
  const SweepOptions o = sweep_of("space: {optimizer.lr: {grid: [0.5, 0.25]}}\nparallel: 2");
  const SearchSpace space = SearchSpace::from_config(o.space);
  const TrialConfigs configs(o, space, 4);
  const Config c = configs.resolve(1, space.trial(0, 1), 0);
  EXPECT_EQ(c.get_string("run_dir"), "sweeps/s/trial-1");
  EXPECT_EQ(c.get_string("name"), "s-trial-1");
  EXPECT_EQ(c.at("optimizer").get_double("lr"), 0.25);
  EXPECT_EQ(c.at("train").get_string("threads"), "2");  // 4 CPUs, 2 trials at once
  // Validation every 4 epochs misses the end of 6: the sweep validates every 6.
  EXPECT_EQ(c.at("train").get_duration("val_every"), TrainUnit::epochs(6));
  EXPECT_EQ(c.at("train").get_duration("max_length"), TrainUnit::epochs(6));
}

TEST(TrialConfigs, AContinuedSweepKeepsTheWidthOfItsTrialFolders) {
  const std::string dir = test::temp_dir() + "/grown";
  const SweepOptions o = sweep_of(
      "space: {optimizer.lr: {uniform: [0.1, 0.2]}}\nstrategy: "
      "random\nmax_trials: 12\nsweep_dir: " +
      dir);
  const SearchSpace space = SearchSpace::from_config(o.space);
  EXPECT_EQ(TrialConfigs(o, space, 1).run_dir(3), dir + "/trial-03");  // a new sweep of 12
  // The same folder, first swept with max_trials 3: its trial-0..2 keep their names.
  std::filesystem::create_directories(dir + "/trial-0");
  std::filesystem::create_directories(dir + "/trial-2");
  const TrialConfigs grown(o, space, 1);
  EXPECT_EQ(grown.run_dir(2), dir + "/trial-2");
  EXPECT_EQ(grown.run_dir(3), dir + "/trial-3");
  EXPECT_EQ(grown.run_dir(11), dir + "/trial-11");
}

TEST(TrialConfigs, AshaRungsSetTheLengthAndAValidationThatFallsOnEach) {
  const SweepOptions o = sweep_of(
      "space: {optimizer.lr: {uniform: [0.1, 0.2]}}\nstrategy: asha\nmax_trials: 4\n"
      "asha: {min_length: 2 steps, max_length: 18 steps}");
  const SearchSpace space = SearchSpace::from_config(o.space);
  const TrialConfigs configs(o, space, 1);
  ASSERT_EQ(configs.rungs().size(), 3u);
  const Config c = configs.resolve(3, space.trial(0, 3), 1);
  EXPECT_EQ(c.at("train").get_duration("max_length"), TrainUnit::steps(6));
  EXPECT_EQ(c.at("train").get_duration("val_every"), TrainUnit::steps(2));
  // One trial at a time: threads auto (following the machine's load), as the base has it.
  EXPECT_EQ(c.at("train").get_string("threads"), "auto");
}

TEST(TrialConfigs, AshaRefusesTheTrainingLengthInTheSpace) {
  // Each rung sets it: a space value would make every promotion train nothing more.
  const SweepOptions o = sweep_of(
      "space: {train.max_length: {choice: [2 epochs]}}\nstrategy: asha\nmax_trials: 2\n"
      "asha: {min_length: 1 epoch, max_length: 9 epochs}");
  const std::string m = resolve_error(o);
  EXPECT_TRUE(test::contains(m, "space.train.max_length: with strategy asha")) << m;
  EXPECT_TRUE(test::contains(m, "take train.max_length out of the space")) << m;
}

TEST(TrialConfigs, AFractionalValidationPeriodThatFallsOnEveryRungIsKept) {
  const auto val_every = [](const std::string& base_train, const std::string& more) {
    const SweepOptions o = options_of<SweepOptions>().parse(Config::from_string(
        "name: s\nmetric: val/loss\nbase: {name: b, data: {train: {type: csv, args: {path: x.csv, "
        "target: y}}}, optimizer: {type: sgd, lr: 0.1}, train: " +
        base_train + "}\nspace: {optimizer.lr: {grid: [0.5]}}\n" + more));
    const SearchSpace space = SearchSpace::from_config(o.space);
    const TrialConfigs configs(o, space, 1);
    return configs.resolve(0, space.trial(0, 0), static_cast<int>(configs.rungs().size()) - 1)
        .at("train")
        .get_duration("val_every")
        .str();
  };
  // Twice an epoch falls on the end of 4 epochs, and of each rung of 1, 3 and 9 epochs.
  EXPECT_EQ(val_every("{max_length: 4 epochs, val_every: 0.5 epochs}", ""), "0.5 epochs");
  EXPECT_EQ(val_every("{max_length: 4 epochs, val_every: 0.5 epochs}",
                      "strategy: asha\nmax_trials: 3\n"
                      "asha: {min_length: 1 epoch, max_length: 9 epochs, reduction_factor: 3}"),
            "0.5 epochs");
  EXPECT_EQ(val_every("{max_length: 3 epochs, val_every: 1.5 epochs}", ""), "1.5 epochs");
  // 0.4 epochs misses the end of 3 epochs (7.5 periods): the sweep validates every 3 epochs.
  EXPECT_EQ(val_every("{max_length: 3 epochs, val_every: 0.4 epochs}", ""), "3 epochs");
  EXPECT_EQ(val_every("{max_length: 3 epochs, val_every: 2 epochs}", ""), "3 epochs");
}

TEST(TrialConfigs, BadSpaceKeysAndValuesNameTheKey) {
  using test::contains;
  EXPECT_TRUE(contains(resolve_error(sweep_of("space: {optimizer.lrr: {grid: [1]}}")),
                       "unknown key 'optimizer.lrr'"));
  EXPECT_TRUE(contains(resolve_error(sweep_of("space: {optimizer.lr: {choice: [fast]}}")),
                       "optimizer.lr: expected float, got 'fast'"));
}

TEST(TrialConfigs, ABaseWithoutTrainingDataIsRefused) {
  const SweepOptions o = sweep_of("space: {optimizer.lr: {grid: [0.5]}}", "");
  const std::string m =
      test::error_of<ConfigError>([&] { TrialConfigs(o, SearchSpace::from_config(o.space), 4); });
  EXPECT_TRUE(test::contains(m, "base: data.train is not set")) << m;
}

TEST(TrialConfigs, TheBaseConfigSetsThreads) {
  SweepOptions o = sweep_of("space: {optimizer.lr: {grid: [0.5]}}\nparallel: 2");
  o.base.set("train.threads", "3");
  const SearchSpace space = SearchSpace::from_config(o.space);
  const Config c = TrialConfigs(o, space, 4).resolve(0, space.trial(0, 0), 0);
  EXPECT_EQ(c.at("train").get_string("threads"), "3");
}

}  // namespace
}  // namespace unitrain
