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
  f.set_section("logs", R"({"log_events": 17, "train_sums": {"loss": [3.5, 7.0, false]}})");
  f.set_section("schedule", R"({"best": 0.1, "bad_epochs": 2})");
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
  EXPECT_EQ(g.sections(), f.sections());
  EXPECT_EQ(g.section("schedule"), R"({"best":0.1,"bad_epochs":2})");
  EXPECT_EQ(g.section("none"), "");
  EXPECT_EQ(g.to_json(), f.to_json());
}

TEST(TrainerStateFile, KeepsIdentityAndCountersAtTheTopAndEachEntrysStateInItsSection) {
  const auto j = nlohmann::ordered_json::parse(full_state_file().to_json());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"format", "config_hash", "world_size", "batch_size",
                                            "accumulation", "zero", "threads", "state",
                                            "data_order", "metrics", "sections"}));
  EXPECT_EQ(j["format"], 2);
  EXPECT_EQ(j["data_order"], 1);  // full_state_file() leaves the default
  EXPECT_EQ(j["state"]["stopped"], true);
  EXPECT_EQ(j["metrics"]["val"]["val/acc"], "nan");
  EXPECT_EQ(j["sections"]["logs"]["train_sums"]["loss"],
            nlohmann::ordered_json::parse("[3.5, 7.0, false]"));
  EXPECT_EQ(j["sections"]["schedule"]["bad_epochs"], 2);
}

TEST(TrainerStateFile, TwoEntriesCannotWriteOneSection) {
  TrainerStateFile f;
  f.set_section("mine", "{}");
  EXPECT_TRUE(
      test::contains(test::error_of<TrainError>([&] { f.set_section("mine", R"({"a": 1})"); }),
                     "two checkpoint entries write the section 'mine'"));
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] { f.set_section("list", "[1]"); }),
                             "section 'list' must be a JSON object"));
}

TEST(TrainerStateFile, AVersion1FileIsReadIntoTheSectionsOfItsEntries) {
  // Written before the sections (2026-11-29): the loop's and the schedule's state at the top.
  const TrainerStateFile f = TrainerStateFile::parse(R"({"format": 1,
      "state": {"step": 5, "stopped": false},
      "loop": {"log_events": 3, "last_val_step": 4, "elapsed": 1.5,
               "best_checkpoint_value": "-inf", "window_bad": true,
               "train_sums": {"loss": [1.0, 2.0, false]}},
      "scheduler": {"best": 0.5}})",
                                                     "f");
  EXPECT_EQ(f.state.step, 5);
  EXPECT_EQ(
      f.section("logs"),
      R"({"log_events":3,"last_val_step":4,"elapsed":1.5,"train_sums":{"loss":[1.0,2.0,false]}})");
  EXPECT_EQ(f.section("checkpoints"), R"({"best_value":"-inf"})");
  EXPECT_EQ(f.section("nonfinite"), R"({"window_bad":true})");
  EXPECT_EQ(f.section("schedule"), R"({"best":0.5})");
}

TEST(TrainerStateFile, MissingSectionsReadAsAFreshRunsDefaults) {
  const TrainerStateFile f = TrainerStateFile::parse(R"({"format": 2, "state": {"step": 5}})", "f");
  EXPECT_EQ(f.state.step, 5);
  EXPECT_EQ(f.world_size, 1);
  EXPECT_EQ(f.threads, 0);  // not recorded: a resume chooses afresh
  EXPECT_FALSE(f.stopped);
  EXPECT_TRUE(f.sections().empty());
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
      "format version 9; this unitrain reads versions 1 and 2"));
  EXPECT_TRUE(contains(error_of<TrainError>([] {
                         TrainerStateFile::parse(R"({"format": 1, "state": {"step": "x"}})",
                                                 "d/ts.json");
                       }),
                       "d/ts.json: "));
  EXPECT_TRUE(contains(error_of<TrainError>([] {
                         TrainerStateFile::parse(R"({"format": 2, "sections": {"logs": 1}})",
                                                 "d/ts.json");
                       }),
                       "d/ts.json: sections.logs must be an object"));
}

}  // namespace
}  // namespace unitrain
