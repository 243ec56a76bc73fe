// Manual optimization through the Trainer: a module that steps its own optimizers (a small
// GAN-like pair), against a hand-written LibTorch loop, across a resume, with schedules, logs
// and the settings it cannot go with.
#include "unitrain/engine/loop/module_run.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/loop/loop_optimizers.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/optim/optimizer_setup.h"
#include "unitrain/parallel/gradient_sync.h"

namespace unitrain {
namespace {

using test::regression_data;

/// Two parts with an optimizer each: `critic` learns from the batch, then `maker` from the
/// critic's output (critic detached from maker's step: the critic's parameters get gradients in
/// maker's backward too, which its optimizer must not see: zeroed before its next backward).
struct TwoPlayers : TrainModule {
  torch::nn::Linear critic{nullptr}, maker{nullptr};
  bool schedule = false;
  TwoPlayers() {
    critic = register_module("critic", torch::nn::Linear(4, 1));
    maker = register_module("maker", torch::nn::Linear(4, 4));
  }
  void configure_optimizers(OptimizerSetup& setup) override {
    setup.add("critic", std::make_unique<torch::optim::SGD>(
                            critic->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)));
    SchedulerPtr decay;
    if (schedule) {
      decay = build_scheduler(Config::from_string("{type: linear}"), setup.context());
    }
    setup.add(
        "maker",
        std::make_unique<torch::optim::Adam>(maker->parameters(), torch::optim::AdamOptions(0.01)),
        std::move(decay));
  }
  static torch::Tensor critic_loss(TwoPlayers& m, const Batch& b) {
    return torch::mse_loss(m.critic->forward(b.at("x")).squeeze(1), b.at("y"));
  }
  static torch::Tensor maker_loss(TwoPlayers& m, const Batch& b) {
    return m.critic->forward(m.maker->forward(b.at("x"))).pow(2).mean();
  }
  StepOutput training_step(const Batch& b) override {
    torch::optim::Optimizer& c = run().optimizer("critic");
    torch::optim::Optimizer& g = run().optimizer("maker");
    c.zero_grad();
    torch::Tensor lc = critic_loss(*this, b);
    run().backward(lc);
    c.step();
    g.zero_grad();
    torch::Tensor lg = maker_loss(*this, b);
    run().backward(lg);
    g.step();
    run().log("maker_loss", lg);  // a tensor: summed where it is, read at the log event
    run().log("step_seen", static_cast<double>(run().step()));
    return {lc.detach(), {}};
  }
  StepOutput validation_step(const Batch& b) override { return {critic_loss(*this, b), {}}; }
};

Config manual_config(const std::string& run_dir, const std::string& extra = "") {
  return Config::from_string("run_dir: " + run_dir +
                             "\ndata: {loader: {batch_size: 8, workers: 0, shuffle: false}}\n"
                             "log: {trackers: [jsonl]}\n"
                             "train: {max_length: 2 epochs, log_every: 1 step}\n" +
                             extra);
}

std::vector<torch::Tensor> params_of(TwoPlayers& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}

std::vector<nlohmann::json> jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST(ModuleRun, AModuleSteppingItsOwnOptimizersTrainsAsAHandWrittenLoop) {
  auto data = regression_data(32);
  torch::manual_seed(11);
  TwoPlayers reference;
  torch::manual_seed(11);
  TwoPlayers module;
  std::vector<double> maker_losses;
  {  // by hand: 2 epochs of 4 batches, in order
    torch::optim::SGD c(reference.critic->parameters(),
                        torch::optim::SGDOptions(0.05).momentum(0.9));
    torch::optim::Adam g(reference.maker->parameters(), torch::optim::AdamOptions(0.01));
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (int64_t i = 0; i < 32; i += 8) {
        std::vector<int64_t> rows(8);
        for (int64_t k = 0; k < 8; ++k) rows[size_t(k)] = i + k;
        Batch b = data->get_batch(rows);
        c.zero_grad();
        TwoPlayers::critic_loss(reference, b).backward();
        c.step();
        g.zero_grad();
        torch::Tensor lg = TwoPlayers::maker_loss(reference, b);
        maker_losses.push_back(lg.item<double>());
        lg.backward();
        g.step();
      }
    }
  }
  const std::string dir = test::temp_dir() + "/run";
  Trainer trainer(manual_config(dir));
  torch::manual_seed(11);
  TwoPlayers fresh;  // the Trainer seeded the generator: build the same start as the reference
  for (size_t i = 0; i < module.parameters().size(); ++i) {
    torch::NoGradGuard no_grad;
    fresh.parameters()[i].copy_(module.parameters()[i]);
  }
  FitResult r = trainer.fit(fresh, data, data);
  EXPECT_EQ(r.state.step, 8);
  EXPECT_EQ(trainer.optimizer(), nullptr);
  const auto a = params_of(reference), b = params_of(fresh);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  // The module's logs, the step it saw, each optimizer's lr.
  const auto events = jsonl(dir + "/metrics.jsonl");
  ASSERT_FALSE(events.empty());
  const nlohmann::json& first = events.front();
  EXPECT_DOUBLE_EQ(first["train/maker_loss"].get<double>(), maker_losses[0]) << first.dump();
  EXPECT_EQ(first["train/step_seen"].get<double>(), 0.0) << first.dump();  // steps before it
  EXPECT_EQ(first["train/lr-critic"].get<double>(), 0.05) << first.dump();
  EXPECT_EQ(first["train/lr-maker"].get<double>(), 0.01) << first.dump();
  EXPECT_FALSE(first.contains("train/lr")) << first.dump();
  EXPECT_THROW(fresh.run(), ConfigError);  // outside fit()
}

/// Pauses the run (a checkpoint to resume from) at the end of its first epoch.
struct PauseAfterFirstEpoch : Callback {
  void on_epoch_end(Trainer& trainer) override {
    if (trainer.state().epoch == 1) trainer.request_pause("first epoch done");
  }
};

TEST(ModuleRun, ItsOptimizersAndSchedulesResumeExactly) {
  auto data = regression_data(32);
  const std::string dir = test::temp_dir();
  const Config config = manual_config(dir + "/run",
                                      "checkpoint: {enabled: true, every: 1 epoch}\n"
                                      "callbacks: [{type: lr_monitor}]\n");
  auto fit = [&](const std::string& run_dir, bool pause) {
    Config c = config.clone();
    c.set("run_dir", run_dir);
    Trainer trainer(c);
    if (pause) trainer.add_callback(std::make_shared<PauseAfterFirstEpoch>());
    TwoPlayers m;
    m.schedule = true;
    FitResult r = trainer.fit(m, data, data);
    return std::make_pair(params_of(m), r);
  };
  const auto whole = fit(dir + "/whole", false).first;
  EXPECT_FALSE(fit(dir + "/parts", true).second.paused.empty());
  const auto [parts, second] = fit(dir + "/parts", false);
  EXPECT_EQ(second.resumed_from.empty(), false);
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_TRUE(torch::equal(whole[i], parts[i])) << i;
  const std::string step = dir + "/parts/checkpoints/step-4";
  EXPECT_TRUE(std::filesystem::exists(step + "/module-optimizer-critic.pt"));
  EXPECT_TRUE(std::filesystem::exists(step + "/module-optimizer-maker.pt"));
  EXPECT_TRUE(std::filesystem::exists(step + "/module-schedule-maker.json"));
  EXPECT_FALSE(std::filesystem::exists(step + "/optimizer.pt"));
  // lr_monitor follows the module's optimizers; train/lr-maker is what the step used, decaying.
  const auto events = jsonl(dir + "/parts/metrics.jsonl");
  double previous = 1;
  for (const nlohmann::json& e : events) {
    if (!e.contains("train/lr-maker")) continue;
    EXPECT_EQ(e["train/lr-maker-group0"], e["train/lr-maker"]) << e.dump();
    EXPECT_TRUE(e.contains("train/lr-critic-group0")) << e.dump();
    EXPECT_LT(e["train/lr-maker"].get<double>(), previous) << e.dump();
    previous = e["train/lr-maker"].get<double>();
  }
  EXPECT_LT(previous, 0.01);
}

TEST(ModuleRun, SettingsThatNeedTheTrainersOptimizerAreErrorsNamingTheKey) {
  auto data = regression_data(32);
  for (const auto& [extra, key] :
       std::vector<std::pair<std::string, std::string>>{{"2", "train.accumulation_steps"},
                                                        {"1.0", "train.clip_grad_norm"},
                                                        {"skip", "train.on_nonfinite"},
                                                        {"bf16-true", "train.precision"}}) {
    Config c = manual_config(test::temp_dir() + "/run");
    c.set(key, extra);
    Trainer trainer(c);
    TwoPlayers m;
    const std::string message = test::config_error_of([&] { trainer.fit(m, data); });
    EXPECT_NE(message.find(key), std::string::npos) << message;
    EXPECT_NE(message.find("configure_optimizers"), std::string::npos) << message;
  }
  // A module that steps nothing of its own has no run().backward().
  struct Plain : test::Regression {
    StepOutput training_step(const Batch& b) override {
      StepOutput out = Regression::training_step(b);
      run().backward(out.loss);
      return out;
    }
  };
  Trainer trainer(test::base_config(test::temp_dir() + "/plain"));
  Plain plain;
  const std::string message = test::config_error_of([&] { trainer.fit(plain, data); });
  EXPECT_NE(message.find("run().backward() is for a module that steps its own"), std::string::npos)
      << message;
}

// What the run says to a module that steps its own optimizers speaks of its settings, not of the
// Trainer's: the optimizer and scheduler sections it does not use, its own schedules
// recomputed when the run is extended, and a non-finite loss.
TEST(ModuleRun, ALayerNeverRegisteredIsWarnedOfAtTheFirstBackward) {
  // A member layer without register_module: its weights reach run().backward()'s loss but no
  // optimizer built from the module's parameters steps them (the returned loss is detached, so
  // only the losses given to run().backward() can show it).
  struct Unregistered : TwoPlayers {
    torch::nn::Linear extra{4, 4};  // not registered
    StepOutput training_step(const Batch& b) override {
      torch::optim::Optimizer& c = run().optimizer("critic");
      c.zero_grad();
      torch::Tensor lc =
          torch::mse_loss(critic->forward(extra->forward(b.at("x"))).squeeze(1), b.at("y"));
      run().backward(lc);
      c.step();
      return {lc.detach(), {}};
    }
  };
  auto data = regression_data(16);
  const std::string dir = test::temp_dir() + "/run";
  Config c = manual_config(dir);
  c.set("train.max_length", "1 epoch");
  Trainer trainer(c);
  Unregistered m;
  trainer.fit(m, data);
  std::ifstream in(dir + "/train.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(test::contains(log,
                             "2 tensor(s) that require grad reach the loss but are not "
                             "parameters of the module ([4, 4], [4]"))
      << log;
  EXPECT_TRUE(test::contains(log, "register_module(\"name\", layer)")) << log;
}

TEST(ModuleRun, ItsMessagesSpeakOfTheModulesOwnSettings) {
  auto data = regression_data(32);
  const std::string dir = test::temp_dir() + "/run";
  auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  for (const char* length : {"2 epochs", "4 epochs"}) {
    Config c = manual_config(dir,
                             "checkpoint: {enabled: true, every: 1 epoch}\n"
                             "optimizer: {type: adam, lr: 0.5}\n");
    c.set("train.max_length", length);
    Trainer trainer(c);
    TwoPlayers m;
    m.schedule = true;
    trainer.fit(m, data, data);
  }
  const std::string log = text_of(dir + "/train.log");
  EXPECT_TRUE(test::contains(log,
                             "[warning] optimizer: not used: the module steps its own "
                             "optimizers (configure_optimizers added 2)"))
      << log;
  EXPECT_TRUE(test::contains(log,
                             "[warning] lr schedule: train.max_length changed since the "
                             "checkpoint, and the module's own schedules"))
      << log;
  EXPECT_TRUE(test::contains(log, "step 9 trains with lr maker ")) << log;
  EXPECT_TRUE(test::contains(log, "(the checkpoint last logged ")) << log;

  struct Diverging : TwoPlayers {
    StepOutput training_step(const Batch& b) override {
      StepOutput out = TwoPlayers::training_step(b);
      out.loss = out.loss * std::numeric_limits<double>::quiet_NaN();
      return out;
    }
  };
  Trainer trainer(manual_config(test::temp_dir() + "/nan"));
  Diverging m;
  std::string message;
  try {
    trainer.fit(m, data);
  } catch (const std::exception& e) {
    message = e.what();
  }
  EXPECT_TRUE(test::contains(message, "non-finite loss")) << message;
  EXPECT_TRUE(test::contains(message, "The module steps its own optimizers")) << message;
  EXPECT_FALSE(test::contains(message, "train.on_nonfinite")) << message;
  EXPECT_FALSE(test::contains(message, "train.clip_grad_norm")) << message;
}

// A resume refused by a setting the module's optimizers cannot go with leaves the run as it
// was: its config.yaml is the one it trained with.
TEST(ModuleRun, ARefusedResumeLeavesTheRunsConfigAsItWas) {
  auto data = regression_data(32);
  const std::string dir = test::temp_dir() + "/run";
  const Config config = manual_config(dir, "checkpoint: {enabled: true, every: 1 epoch}\n");
  {
    Trainer trainer(config);
    TwoPlayers m;
    trainer.fit(m, data);
  }
  auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string before = text_of(dir + "/config.yaml");
  ASSERT_TRUE(test::contains(before, "2 epochs")) << before;
  Config longer = config.clone();
  longer.set("train.max_length", "4 epochs");
  longer.set("train.clip_grad_norm", "1.0");
  Trainer trainer(longer);
  TwoPlayers m;
  const std::string message = test::config_error_of([&] { trainer.fit(m, data); });
  EXPECT_TRUE(test::contains(message, "train.clip_grad_norm")) << message;
  EXPECT_EQ(text_of(dir + "/config.yaml"), before);
}

// LoopModuleRun on its own (no Trainer, no loop): the counters it shows, the log it forwards,
// a backward that divides by the ranks, its optimizers by name, and what it refuses.
TEST(ModuleRun, OnItsOwnItShowsTheCountersAndStepsTheNamedOptimizers) {
  torch::Tensor w = torch::ones({2}, torch::requires_grad());
  auto setup = std::make_unique<OptimizerSetup>(ScheduleContext{});
  setup->add("only", std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{w}, 0.5));
  LoopOptimizers manual(std::move(setup), false);
  TrainState counters;
  counters.step = 4;
  counters.epoch = 1;
  NoGradientSync sync;
  std::vector<std::pair<std::string, torch::Tensor>> logged;
  LoopModuleRun run(
      counters, 1, 2, torch::kCPU,
      [&](const std::string& k, torch::Tensor v) { logged.emplace_back(k, std::move(v)); }, sync,
      manual, {w});
  EXPECT_EQ(run.step(), 4);
  EXPECT_EQ(run.epoch(), 1);
  EXPECT_EQ(run.rank(), 1);
  EXPECT_EQ(run.world_size(), 2);
  counters.step = 5;  // it reads the loop's counters, not a copy
  EXPECT_EQ(run.step(), 5);
  EXPECT_EQ(run.device(), torch::Device(torch::kCPU));
  run.log("gap", 0.25);            // a number: a float64 scalar
  run.log("norm", (w * 2).sum());  // a tensor: detached, on its device, unread
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_EQ(logged[0].first, "gap");
  EXPECT_EQ(logged[0].second.scalar_type(), torch::kFloat64);
  EXPECT_EQ(logged[0].second.item<double>(), 0.25);
  EXPECT_EQ(logged[1].first, "norm");
  EXPECT_FALSE(logged[1].second.requires_grad());
  EXPECT_EQ(logged[1].second.item<float>(), 4.0f);
  std::string refused = test::message_of([&] { run.log("many", w.detach()); });
  EXPECT_TRUE(test::contains(refused, "run().log('many') takes a scalar tensor, got 2 values"))
      << refused;
  run.backward((w * 3).sum());  // 1/2 of it: the reduce sums the 2 ranks' halves
  EXPECT_TRUE(torch::equal(w.grad(), torch::full({2}, 1.5)));
  run.optimizer("only").step();
  EXPECT_TRUE(torch::allclose(w.detach(), torch::full({2}, 0.25)));
  std::string m = test::message_of([&] { run.backward(w * 3); });
  EXPECT_TRUE(test::contains(m, "run().backward() needs a scalar loss")) << m;
  m = test::message_of([&] { run.optimizer("other"); });
  EXPECT_TRUE(test::contains(m, "it added: only")) << m;
}

TEST(ModuleRun, OnItsOwnBackwardIsRefusedWhenTheTrainerStepsTheOptimizer) {
  torch::Tensor w = torch::ones({2}, torch::requires_grad());
  LoopOptimizers automatic(std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{w}, 0.5),
                           nullptr, false);
  TrainState counters;
  NoGradientSync sync;
  LoopModuleRun run(counters, 0, 1, torch::kCPU, [](const std::string&, torch::Tensor) {}, sync,
                    automatic, {w});
  const std::string m = test::message_of([&] { run.backward(w.sum()); });
  EXPECT_TRUE(test::contains(m, "return the loss from training_step")) << m;
}

}  // namespace unitrain
