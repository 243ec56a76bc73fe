#include "unitrain/sweep/sweep_options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string sweep_options_error(const std::string& yaml) {
  try {
    options_of<SweepOptions>().parse(Config::from_string(yaml));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SweepOptions, ReadsTheFileWithDefaults) {
  const SweepOptions o = options_of<SweepOptions>().parse(Config::from_string(
      "name: s\nbase: run.yaml\nspace: {optimizer.lr: {grid: [1]}}\nmetric: val/acc\n"
      "mode: max\nstrategy: asha\nasha: {min_length: 100 steps, max_length: 900 steps}"));
  EXPECT_EQ(o.folder(), "sweeps/s");
  EXPECT_TRUE(o.higher_is_better);
  EXPECT_EQ(o.strategy, SweepStrategy::Asha);
  EXPECT_EQ(o.parallel, 1);
  EXPECT_EQ(o.reduction_factor, 3);
  EXPECT_EQ(o.max_length, TrainUnit::steps(900));
  EXPECT_EQ(o.base.node().Scalar(), "run.yaml");
}

TEST(SweepOptions, BadKeysAreNamed) {
  using test::contains;
  const std::string head = "name: s\nbase: r.yaml\nspace: {a: {grid: [1]}}\n";
  EXPECT_TRUE(contains(sweep_options_error(head + "metric: acc"),
                       "metric: 'acc' is not a "
                       "validation metric"));
  EXPECT_TRUE(
      contains(sweep_options_error(head + "metric: val/acc\nparalel: 2"), "unknown key 'paralel'"));
  EXPECT_TRUE(contains(sweep_options_error(head + "metric: val/acc\nstrategy: bayes"), "strategy"));
  EXPECT_TRUE(contains(sweep_options_error(head + "metric: val/acc\nstrategy: asha\n"
                                                  "asha: {min_length: 1 epoch, max_length: 90 "
                                                  "steps}"),
                       "asha.max_length: min_length and max_length take the same unit"));
}

TEST(SweepOptions, AKeyInsideABaseFileIsNotASweepKey) {
  const std::string file = test::temp_dir() + "/s.yaml";
  std::ofstream(file) << "name: s\nbase: run.yaml\nspace: {a: {grid: [1]}}\nmetric: val/acc\n";
  const std::string m = test::config_error_of([&] {
    load_sweep_options(file, {{"base.optimizer.lr", "0.1"}});
  });
  EXPECT_TRUE(test::contains(m, "--base.optimizer.lr: base is the file run.yaml, not a map")) << m;
  EXPECT_TRUE(test::contains(m, "--space.optimizer.lr '{choice: [0.1]}'")) << m;
  // A base given as a map takes its keys.
  std::ofstream(file) << "name: s\nbase: {optimizer: {lr: 1}}\nspace: {a: {grid: [1]}}\n"
                         "metric: val/acc\n";
  const SweepOptions o = load_sweep_options(file, {{"base.optimizer.lr", "0.1"}});
  EXPECT_EQ(o.base.node()["optimizer"]["lr"].as<double>(), 0.1);
}

TEST(SweepOptions, EveryKeyIsInDocsSweeps) {
  std::ifstream in(test::source_dir() + "/docs/sweeps.md");
  std::stringstream docs;
  docs << in.rdbuf();
  const std::string table = options_of<SweepOptions>().schema()->markdown("");
  const std::regex key(R"(^\| `([^`]+)` \|)", std::regex::multiline);
  int keys = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), key), end; it != end; ++it, ++keys) {
    EXPECT_TRUE(test::contains(docs.str(), "| `" + (*it)[1].str() + "` |")) << (*it)[1];
  }
  EXPECT_GE(keys, 15);
}

}  // namespace
}  // namespace unitrain
