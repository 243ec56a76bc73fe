#include "unitrain/sweep/sweep_results.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"
#include "unitrain/sweep/trial_record.h"

namespace unitrain {
namespace {

std::vector<TrialRecord> synthetic_trials() {
  std::vector<TrialRecord> trials(4);
  for (int k = 0; k < 4; ++k) {
    trials[k].index = k;
    trials[k].parameters = {{"optimizer.lr", std::to_string(k)}, {"user.tag", "a,b"}};
    trials[k].status = TrialStatus::Stopped;
    trials[k].steps = 10 * (k + 1);
  }
  trials[0].rung_metrics = {0.5};
  trials[1].rung_metrics = {0.7, 0.6};  // a higher rung ranks first, whatever its metric
  trials[1].status = TrialStatus::Finished;
  trials[2].rung_metrics = {0.9};
  trials[2].status = TrialStatus::StoppedEarly;  // its job's early_stopping ended it
  trials[2].epochs = 7;
  trials[3].status = TrialStatus::Failed;
  return trials;
}

TEST(SweepResults, RanksByRungThenMetricWithoutMetricLast) {
  const auto trials = synthetic_trials();
  std::vector<int64_t> order;
  for (const TrialRecord* t : rank_trials(trials, true)) order.push_back(t->index);
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2, 0, 3}));
  order.clear();
  for (const TrialRecord* t : rank_trials(trials, false)) order.push_back(t->index);
  EXPECT_EQ(order, (std::vector<int64_t>{1, 0, 2, 3}));
}

TEST(SweepResults, WritesCsvAndJsonRowsInTrialOrder) {
  const std::string dir = test::temp_dir();
  write_sweep_results(dir, synthetic_trials(), "val/acc", true, {{"optimizer.lr", "log"}});
  std::ifstream csv(dir + "/results.csv");
  std::stringstream text;
  text << csv.rdbuf();
  EXPECT_EQ(text.str(),
            "trial,optimizer.lr,user.tag,rung,val/acc,steps,status\n"
            "0,0,\"a,b\",0,0.5,10,stopped\n"
            "1,1,\"a,b\",1,0.6,20,finished\n"
            "2,2,\"a,b\",0,0.9,30,stopped early\n"
            "3,3,\"a,b\",,,40,failed\n");  // no rung reached: no rung, not -1
  std::ifstream json_file(dir + "/results.json");
  const auto json = nlohmann::json::parse(json_file);
  EXPECT_EQ(json["metric"], "val/acc");
  EXPECT_EQ(json["scales"]["optimizer.lr"], "log");
  ASSERT_EQ(json["trials"].size(), 4u);
  EXPECT_EQ(json["trials"][1]["metric"], 0.6);
  EXPECT_EQ(json["trials"][1]["parameters"]["optimizer.lr"], 1);  // a number, not "1"
  EXPECT_EQ(json["trials"][1]["parameters"]["user.tag"], "a,b");
  EXPECT_TRUE(json["trials"][3]["metric"].is_null());
  EXPECT_TRUE(json["trials"][3]["rung"].is_null());
  EXPECT_EQ(json["trials"][2]["status"], "stopped early");
  EXPECT_EQ(json["trials"][2]["epochs"], 7);
  EXPECT_EQ(json["trials"][1]["rung_metrics"], nlohmann::json::array({0.7, 0.6}));
  EXPECT_EQ(json["mode"], "max");
  EXPECT_EQ(json["best"], 1);  // the highest rung first
  write_sweep_results(dir, {synthetic_trials()[3]}, "val/acc", false);
  const auto none = nlohmann::json::parse(std::ifstream(dir + "/results.json"));
  EXPECT_EQ(none["mode"], "min");
  EXPECT_TRUE(none["best"].is_null());  // no trial with a metric
}

TEST(SweepResults, ResultsJsonGivesEachParameterItsType) {
  std::vector<TrialRecord> trials(1);
  trials[0].parameters = {{"optimizer.lr", "0.00317429"},   {"train.max_length", "3 epochs"},
                          {"data.loader.batch_size", "64"}, {"data.loader.shuffle", "false"},
                          {"model.args.sizes", "[64, 10]"}, {"user.tag", "\"1.5\""},
                          {"optimizer.type", "adamw"}};
  trials[0].status = TrialStatus::Paused;
  const std::string dir = test::temp_dir();
  write_sweep_results(dir, trials, "val/acc", true);
  const auto json = nlohmann::json::parse(std::ifstream(dir + "/results.json"));
  EXPECT_EQ(json["trials"][0]["parameters"],
            nlohmann::json::parse(R"({"optimizer.lr": 0.00317429, "train.max_length": "3 epochs",
                "data.loader.batch_size": 64, "data.loader.shuffle": false,
                "model.args.sizes": [64, 10], "user.tag": "1.5", "optimizer.type": "adamw"})"));
  EXPECT_TRUE(json["trials"][0]["parameters"]["data.loader.batch_size"].is_number_integer());
}

TEST(SweepResults, TheTableShowsNoRungForATrialPausedBeforeItsFirst) {
  auto trials = synthetic_trials();
  trials[3].status = TrialStatus::Paused;
  const auto lines = results_table(trials, "val/acc", true);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines.back(), "3      3             a,b       -     -        40     paused");
  for (const auto& line : lines) EXPECT_EQ(line.find("-1"), std::string::npos) << line;
  EXPECT_NE(lines[2].find("stopped early"), std::string::npos) << lines[2];
}

TEST(TrialRecords, SweepJsonReadsBackWhatWasWritten) {
  const std::string file = test::temp_dir() + "/sweep.json";
  const auto trials = synthetic_trials();
  write_trial_records(file, trials);
  const auto back = read_trial_records(file);
  ASSERT_EQ(back.size(), trials.size());
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].parameters, trials[i].parameters);
    EXPECT_EQ(back[i].rung_metrics, trials[i].rung_metrics);
    EXPECT_EQ(back[i].status, trials[i].status);
    EXPECT_EQ(back[i].steps, trials[i].steps);
    EXPECT_EQ(back[i].epochs, trials[i].epochs);
  }
}

}  // namespace
}  // namespace unitrain
