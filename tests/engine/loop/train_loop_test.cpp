// TrainLoop through the Trainer: what its logs say about the learning rate.
#include "unitrain/engine/loop/train_loop.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

Config schedule_config(const std::string& run_dir, const std::string& length,
                       const std::string& scheduler = "{type: cosine, args: {warmup: 2 steps}}") {
  return Config::from_string("run_dir: " + run_dir +
                             "\n"
                             "optimizer: {type: sgd, lr: 0.1}\n"
                             "scheduler: " +
                             scheduler +
                             "\n"
                             "callbacks: [{type: lr_monitor}]\n"
                             "data: {loader: {batch_size: 8, workers: 0, shuffle: false}}\n"
                             "log: {trackers: [jsonl]}\n"
                             "train: {max_length: " +
                             length + ", log_every: 1 step}\n");
}

void fit_regression(const Config& config) {
  Trainer trainer(config);
  test::Regression module;
  trainer.fit(module, test::regression_data(32));
}

std::vector<nlohmann::json> train_events(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("train/lr")) out.push_back(j);
  }
  return out;
}

TEST(TrainLoop, TrainLrIsTheLrTheLoggedStepUsedAsLrMonitorSays) {
  const std::string dir = test::temp_dir();
  fit_regression(schedule_config(dir, "2 epochs"));
  const auto events = train_events(dir);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events[0]["train/lr"].get<double>(), 0.0);          // warmup: step 1 trains with 0 / 2
  EXPECT_DOUBLE_EQ(events[1]["train/lr"].get<double>(), 0.05);  // step 2 with 1 / 2
  for (const auto& e : events) {
    EXPECT_EQ(e["train/lr"].get<double>(), e["train/lr-group0"].get<double>()) << e.dump();
  }
}

TEST(TrainLoop, ExtendingAFinishedRunSaysThatTheScheduleIsRecomputed) {
  const std::string dir = test::temp_dir();
  fit_regression(schedule_config(dir, "2 epochs"));
  fit_regression(schedule_config(dir, "3 epochs"));
  std::ifstream log(dir + "/train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(
      test::contains(text, "[warning] lr schedule: train.max_length changed since the checkpoint"))
      << text;
  EXPECT_TRUE(test::contains(text, "step 9 trains with lr ")) << text;
  EXPECT_EQ(train_events(dir).size(), 12u);
}

TEST(TrainLoop, ExtendingARunWithAConstantLrSaysNothingOfItsSchedule) {
  const std::string dir = test::temp_dir();
  fit_regression(schedule_config(dir, "2 epochs", "{type: constant}"));
  fit_regression(schedule_config(dir, "3 epochs", "{type: constant}"));
  std::ifstream log(dir + "/train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(test::contains(text, "resumed from")) << text;
  EXPECT_FALSE(test::contains(text, "lr schedule:")) << text;
}

}  // namespace
}  // namespace unitrain

namespace unitrain {
namespace {

/// A module whose own code fails: in training_step, in the backward of a detached loss, or in
/// validation_step (c10::Error from a shape mismatch).
struct Failing : test::Regression {
  std::string where;
  int steps = 0;
  StepOutput training_step(const Batch& b) override {
    if (where == "training_step" && ++steps == 3) throw std::runtime_error("my bug");
    if (where == "backward") return {fc->forward(b.at("x")).sum().detach(), {}};
    return Regression::training_step(b);
  }
  StepOutput validation_step(const Batch& b) override {
    if (where == "validation_step") fc->forward(b.at("x").view({-1, 2}));  // 2 != 4 features
    return Regression::validation_step(b);
  }
};

std::string failure_of(const std::string& where) {
  Trainer trainer(test::base_config(test::temp_dir()));
  Failing module;
  module.where = where;
  auto data = test::regression_data(32);
  return test::error_of<TrainError>([&] { trainer.fit(module, data, data); });
}

TEST(TrainLoop, ErrorsFromTheModulesOwnCodeNameTheMethodAndStepWithoutABacktrace) {
  const std::string train = failure_of("training_step");
  EXPECT_TRUE(test::contains(train, "the module's training_step at step 3 failed: my bug"))
      << train;
  const std::string back = failure_of("backward");
  EXPECT_TRUE(test::contains(back, "the backward of the loss training_step returned at step 1"))
      << back;
  EXPECT_TRUE(test::contains(back, "does not require grad")) << back;
  const std::string val = failure_of("validation_step");
  EXPECT_TRUE(test::contains(val, "the module's validation_step on batch 1 of data.val failed: "))
      << val;
  for (const std::string& m : {train, back, val}) {
    EXPECT_FALSE(test::contains(m, "frame #")) << m;
    EXPECT_FALSE(test::contains(m, "Exception raised from")) << m;
  }
}

}  // namespace
}  // namespace unitrain
