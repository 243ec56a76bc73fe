// TrainerStateFile: trainer_state.json's one reader and writer.
#include "unitrain/checkpoint/trainer_state_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace unitrain {
namespace {

TrainerStateFile full_state_file() {
  TrainerStateFile f;
  f.config_hash = "0a1b2c3d";
  f.world_size = 2;
  f.batch_size = 16;
  f.accumulation = 3;
  f.zero = 1;
  f.threads = 2;
  f.state = {4, 120, 3840, 7, 1, 2};
  f.stopped = true;
  f.last_train = {{"train/loss", 0.25}, {"train/lr", 1e-3}};
  f.last_val = {{"val/acc", std::numeric_limits<double>::quiet_NaN()}};
  f.log_events = 17;
  f.last_val_step = 100;
  f.elapsed = 12.5;
  f.best_value = -std::numeric_limits<double>::infinity();
  f.window_bad = true;
  f.train_sums = {{"loss", {3.5, 7.0, false}}, {"ppl", {1.0, 2.0, true}}};
  f.scheduler = {{"best", 0.1}, {"bad_epochs", 2}};
  return f;
}

TEST(TrainerStateFile, RoundTripsEveryFieldWithNonFiniteValues) {
  const TrainerStateFile f = full_state_file();
  const TrainerStateFile g = TrainerStateFile::parse(f.to_json(), "x/trainer_state.json");
  EXPECT_EQ(g.config_hash, f.config_hash);
  EXPECT_EQ(g.world_size, 2);
  EXPECT_EQ(g.batch_size, 16);
  EXPECT_EQ(g.accumulation, 3);
  EXPECT_EQ(g.zero, 1);
  EXPECT_EQ(g.threads, 2);
  EXPECT_EQ(g.state.epoch, 4);
  EXPECT_EQ(g.state.step, 120);
  EXPECT_EQ(g.state.samples, 3840);
  EXPECT_EQ(g.state.batch_in_epoch, 7);
  EXPECT_EQ(g.state.micro_in_window, 1);
  EXPECT_EQ(g.state.skipped_steps, 2);
  EXPECT_TRUE(g.stopped);
  EXPECT_EQ(g.last_train, f.last_train);
  EXPECT_TRUE(std::isnan(g.last_val.at("val/acc")));
  EXPECT_EQ(g.log_events, 17);
  EXPECT_EQ(g.last_val_step, 100);
  EXPECT_EQ(g.elapsed, 12.5);
  EXPECT_TRUE(std::isinf(g.best_value) && g.best_value < 0);
  EXPECT_TRUE(g.window_bad);
  ASSERT_EQ(g.train_sums.size(), 2u);
  EXPECT_EQ(g.train_sums.at("loss").weighted, 3.5);
  EXPECT_TRUE(g.train_sums.at("ppl").exp_of_mean);
  EXPECT_EQ(g.scheduler, f.scheduler);
  EXPECT_EQ(g.to_json(), f.to_json());
}

TEST(TrainerStateFile, KeepsTheLayoutPythonAndOlderRunsRead) {
  const auto j = nlohmann::ordered_json::parse(full_state_file().to_json());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"format", "config_hash", "world_size", "batch_size",
                                            "accumulation", "zero", "threads", "state",
                                            "data_order", "metrics", "loop", "scheduler"}));
  EXPECT_EQ(j["data_order"], 1);  // full_state_file() leaves the default
  EXPECT_EQ(j["state"]["stopped"], true);
  EXPECT_EQ(j["metrics"]["val"]["val/acc"], "nan");
  EXPECT_EQ(j["loop"]["best_checkpoint_value"], "-inf");
  EXPECT_EQ(j["loop"]["train_sums"]["loss"], nlohmann::ordered_json::parse("[3.5, 7.0, false]"));
}

TEST(TrainerStateFile, MissingSectionsReadAsAFreshRunsDefaults) {
  const TrainerStateFile f = TrainerStateFile::parse(R"({"format": 1, "state": {"step": 5}})", "f");
  EXPECT_EQ(f.state.step, 5);
  EXPECT_EQ(f.world_size, 1);
  EXPECT_EQ(f.threads, 0);  // not recorded: a resume chooses afresh
  EXPECT_EQ(f.last_val_step, -1);
  EXPECT_TRUE(std::isnan(f.best_value));
  EXPECT_TRUE(f.train_sums.empty());
}

TEST(TrainerStateFile, DataOrderRoundTripsAndIsFisherYatesInOlderFiles) {
  // Files written before data_order existed trained on Fisher-Yates orders: resumed so.
  const TrainerStateFile old = TrainerStateFile::parse(R"({"format": 1, "state": {}})", "f");
  EXPECT_EQ(old.data_order, ShuffleAlgorithm::FisherYates);
  TrainerStateFile f;
  f.data_order = ShuffleAlgorithm::Feistel;
  EXPECT_EQ(TrainerStateFile::parse(f.to_json(), "f").data_order, ShuffleAlgorithm::Feistel);
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([] {
                               TrainerStateFile::parse(R"({"format": 1, "data_order": 7})", "d/t");
                             }),
                             "d/t: data_order 7 is not an order this unitrain knows"));
}

TEST(TrainerStateFile, BadFilesAreTrainErrorsNamingTheFile) {
  using test::contains;
  using test::error_of;
  EXPECT_TRUE(contains(error_of<TrainError>([] { TrainerStateFile::parse("{", "d/ts.json"); }),
                       "d/ts.json is not valid JSON"));
  EXPECT_TRUE(contains(
      error_of<TrainError>([] { TrainerStateFile::parse(R"({"format": 9})", "d/ts.json"); }),
      "format version 9; this unitrain reads version 1"));
  EXPECT_TRUE(contains(error_of<TrainError>([] {
                         TrainerStateFile::parse(R"({"format": 1, "state": {"step": "x"}})",
                                                 "d/ts.json");
                       }),
                       "d/ts.json: "));
  EXPECT_TRUE(contains(error_of<TrainError>([] {
                         TrainerStateFile::parse(
                             R"({"format": 1, "loop": {"train_sums": {"a": [1]}}})", "d/ts.json");
                       }),
                       "loop.train_sums.a must be [weighted, weight, exp_of_mean]"));
}

}  // namespace
}  // namespace unitrain
