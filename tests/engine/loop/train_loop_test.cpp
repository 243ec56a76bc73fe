// TrainLoop on its own (no Trainer: it trains as the Trainer's fit does), and through the
// Trainer: what its logs say about the learning rate.
#include "unitrain/engine/loop/train_loop.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/core/run_position.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/loop/run_decisions.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/precision/precision.h"

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

/// The weights of test::Regression after training `init` on 32 samples as `config` says, by a
/// TrainLoop built from its parts alone (what Trainer::fit builds it from).
std::vector<torch::Tensor> loop_alone(const Config& config, const test::Regression& init,
                                      FitResult& result) {
  register_builtins();
  const Config resolved = resolve_run_config(config);
  const RunSettings settings = RunSettings::from_config(resolved);
  CallbackList callbacks;  // no Trainer: no callbacks
  RunDecisions decisions;
  decisions.start(false, false, 0, 0);
  test::Regression module;
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < module.parameters().size(); ++i)
      module.parameters()[i].copy_(init.parameters()[i]);
  }
  Precision precision(PrecisionMode::Fp32, module);
  const std::vector<std::shared_ptr<CheckpointEntry>> extra;
  const ResumePoint fresh;
  torch::manual_seed(settings.seed);  // as the Trainer seeds rank 0 before its loop
  TrainLoop loop({settings, resolved, callbacks, decisions, precision, module, nullptr,
                  std::make_unique<ThreadGovernor>(
                      choose_thread_count(settings.train.threads, nullptr, 1, 2.0, 0), 1)},
                 test::regression_data(32), nullptr, fresh);
  int64_t planned_steps = -1;
  loop.start([&](const RunPlan& plan) {
    planned_steps = plan.total_steps;
    return std::make_unique<LoopOptimizers>(build_optimizer(settings.optimizer, module), nullptr,
                                            settings.schedule_per_epoch);
  });
  EXPECT_EQ(planned_steps, 8);  // 2 epochs of 4 batches of 8
  loop.list_checkpoints(extra);
  prepare_writable_dir(settings.run_dir);  // the run folder, as the Trainer prepares it
  loop.open_run_files(fresh);
  EXPECT_FALSE(loop.announce());
  RunPosition position;
  loop.run(position);
  result = loop.result();
  std::vector<torch::Tensor> out;
  for (const auto& p : module.parameters()) out.push_back(p.detach().clone());
  return out;
}

TEST(TrainLoop, OnItsOwnItTrainsAsTheTrainersFitDoes) {
  const std::string dir = test::temp_dir();
  Trainer trainer(test::base_config(dir + "/trainer"));
  test::Regression module;
  test::Regression init;
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < init.parameters().size(); ++i)
      init.parameters()[i].copy_(module.parameters()[i]);
  }
  const FitResult by_trainer = trainer.fit(module, test::regression_data(32));
  FitResult alone;
  const std::vector<torch::Tensor> weights =
      loop_alone(test::base_config(dir + "/loop"), init, alone);
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_TRUE(torch::equal(weights[i], module.parameters()[i])) << "parameter " << i;
  }
  EXPECT_EQ(alone.state.step, 8);
  EXPECT_EQ(alone.state.epoch, 2);
  EXPECT_EQ(alone.state.samples, by_trainer.state.samples);
  EXPECT_EQ(alone.last_train, by_trainer.last_train);
  // Its logs and checkpoints where the config puts them.
  EXPECT_TRUE(std::filesystem::exists(dir + "/loop/metrics.jsonl"));
  EXPECT_EQ(alone.last_checkpoint, dir + "/loop/checkpoints/step-8");
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
