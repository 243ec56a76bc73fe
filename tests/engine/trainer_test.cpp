#include "unitrain/engine/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/data/tensor_dataset.h"
#include "unitrain/log/console.h"
#include "unitrain/optim/optimizer_setup.h"

namespace unitrain {
namespace {

using test::base_config;
using test::Regression;
using test::regression_data;

std::vector<torch::Tensor> fit_params(Config config, DatasetPtr data, FitResult* result = nullptr) {
  Trainer trainer(config);
  Regression module;
  FitResult r = trainer.fit(module, data, data);
  if (result) *result = r;
  std::vector<torch::Tensor> out;
  for (const auto& p : module.parameters()) out.push_back(p.detach().clone());
  return out;
}

void expect_equal_params(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                         double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (tol == 0) {
      EXPECT_TRUE(torch::equal(a[i], b[i])) << a[i] << " vs " << b[i];
    } else {
      EXPECT_TRUE(torch::allclose(a[i], b[i], tol, tol)) << a[i] << " vs " << b[i];
    }
  }
}

}  // namespace

TEST(Trainer, LearnsAndLogsEveryStep) {
  std::string dir = test::temp_dir() + "/run";
  FitResult r;
  fit_params(base_config(dir, "").clone(), regression_data(64), &r);
  EXPECT_EQ(r.state.step, 16);  // 64 / 8 x 2 epochs
  EXPECT_EQ(r.state.epoch, 2);
  EXPECT_EQ(r.state.samples, 128);
  EXPECT_LT(r.last_val.at("val/loss"), 1.0);
  std::ifstream jsonl(dir + "/metrics.jsonl");
  std::string line;
  int train_lines = 0, val_lines = 0;
  while (std::getline(jsonl, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* k : {"step", "epoch", "samples", "time"}) EXPECT_TRUE(j.contains(k)) << line;
    if (j.contains("train/loss")) {
      ++train_lines;
      EXPECT_TRUE(j.contains("train/lr"));
      EXPECT_TRUE(j.contains("train/mae"));
    }
    if (j.contains("val/loss")) ++val_lines;
  }
  EXPECT_EQ(train_lines, 16);
  EXPECT_EQ(val_lines, 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.yaml"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/train.log"));
}

TEST(Trainer, AccumulationEqualsOneLargeBatch) {
  auto data = regression_data(60);  // 60 = 7 full batches of 8 + a short one of 4
  std::string dir = test::temp_dir();
  Config big = base_config(dir + "/a");
  big.set("data.loader.batch_size", "32");
  big.set("train.max_length", "3 epochs");
  Config small = base_config(dir + "/b");
  small.set("train.accumulation_steps", "4");
  small.set("train.max_length", "3 epochs");
  FitResult rb, rs;
  auto pb = fit_params(big, data, &rb);
  auto ps = fit_params(small, data, &rs);
  EXPECT_EQ(rb.state.step, rs.state.step);
  expect_equal_params(pb, ps, 1e-5);
  Config global = base_config(dir + "/c");
  global.set("train.global_batch_size", "32");
  global.set("train.max_length", "3 epochs");
  expect_equal_params(pb, fit_params(global, data), 1e-5);
}

TEST(Trainer, SameSeedSameRunWhateverTheWorkers) {
  auto data = regression_data(100);
  std::string dir = test::temp_dir();
  Config a = base_config(dir + "/a");
  a.set("data.loader.shuffle", "true");
  Config b = a.clone();
  b.set("run_dir", dir + "/b");
  b.set("data.loader.workers", "3");
  expect_equal_params(fit_params(a, data), fit_params(b, data), 0);
  Config c = a.clone();
  c.set("run_dir", dir + "/c");
  c.set("seed", "43");
  auto pa = fit_params(a, data), pc = fit_params(c, data);
  EXPECT_FALSE(torch::equal(pa[0], pc[0]));
}

TEST(Trainer, StopsOnNonFiniteLossNamingTheStep) {
  Config c = base_config(test::temp_dir() + "/run");
  Trainer trainer(c);
  Regression module;
  module.poison_at = 3;
  auto data = regression_data(64);
  try {
    trainer.fit(module, data);
    FAIL() << "expected a TrainError";
  } catch (const TrainError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite loss at step 3"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("mae="), std::string::npos) << e.what();
  }
}

TEST(Trainer, AFailedFitSaysItsErrorInTrainLogAndTheSummary) {
  // Whoever calls fit() (a program of its own here): the error in train.log, once even when the
  // caller logs it too, not on the console (the caller says it), and results/summary.json's
  // status; a refusal writes neither.
  const std::string dir = test::temp_dir() + "/run";
  Trainer trainer(base_config(dir));
  Regression module;
  module.poison_at = 3;
  std::string message, during_fit, by_caller;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  try {
    trainer.fit(module, regression_data(64));
  } catch (const TrainError& e) {
    message = e.what();
    during_fit = testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    log::error(message);  // as the command does
  }
  by_caller = testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
  ASSERT_FALSE(message.empty());
  // On the console once: the caller's (a program printing e.what() does not see it twice).
  EXPECT_EQ(during_fit.find(message), std::string::npos) << during_fit;
  EXPECT_NE(by_caller.find(message), std::string::npos) << by_caller;
  std::ifstream log_file(dir + "/train.log");
  const std::string log((std::istreambuf_iterator<char>(log_file)),
                        std::istreambuf_iterator<char>());
  const size_t at = log.find("[error] " + message);
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find("[error] " + message, at + 1), std::string::npos) << log;  // once
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/results/summary.json"));
  EXPECT_EQ(summary["status"], "failed: " + message);
  EXPECT_EQ(summary["step"], 2) << summary.dump();
  // What an earlier part of the run wrote there stays (its final metrics); the status and the
  // counters are this failure's.
  {
    const std::string earlier = test::temp_dir() + "/earlier";
    Config c = base_config(earlier, "checkpoint: {every: 2 steps}\n");
    c.set("train.max_length", "2 steps");
    Regression fine;
    Trainer(c).fit(fine, regression_data(64));
    c.set("train.max_length", "8 steps");
    Regression diverging;
    diverging.poison_at = 3;  // its third step: step 5 of the run
    EXPECT_THROW(Trainer(c).fit(diverging, regression_data(64)), TrainError);
    const auto j = nlohmann::json::parse(std::ifstream(earlier + "/results/summary.json"));
    EXPECT_TRUE(j["status"].get<std::string>().rfind("failed: non-finite loss at step 5", 0) == 0)
        << j.dump();
    EXPECT_EQ(j["step"], 4) << j.dump();
    EXPECT_FALSE(j["final"]["train"].empty()) << j.dump();  // the first part's
  }

  const std::string refused = test::temp_dir() + "/refused";
  Config c = base_config(refused);
  c.set("train.clip_grad_norm", "-1");
  EXPECT_THROW(Trainer(c).fit(module, regression_data(64)), ConfigError);
  EXPECT_FALSE(std::filesystem::exists(refused + "/results/summary.json"));
}

TEST(Trainer, SkipsNonFiniteUpdatesWhenAsked) {
  Config c = base_config(test::temp_dir() + "/run");
  c.set("train.on_nonfinite", "skip");
  Trainer trainer(c);
  Regression module;
  module.poison_at = 3;
  FitResult r = trainer.fit(module, regression_data(64));
  EXPECT_EQ(r.state.skipped_steps, 1);
  EXPECT_EQ(r.state.step, 16);
  for (const auto& p : module.parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
}

TEST(Trainer, RollsBackToTheLastCheckpointOnANonFiniteLossWhenAsked) {
  const std::string dir = test::temp_dir() + "/run";
  Config c = base_config(dir, "checkpoint: {every: 2 steps, keep_last: 10}\n");
  c.set("train.on_nonfinite", "rollback");
  c.set("train.divergence.lr_factor", "0.5");
  Trainer trainer(c);
  Regression module;
  module.poison_at = 3;
  FitResult r = trainer.fit(module, regression_data(64));
  EXPECT_EQ(r.rollbacks, 1);
  // Rolled back to step 2, batch 3 of 8 skipped: 7 + 8 steps in 2 epochs.
  EXPECT_EQ(r.state.step, 15);
  EXPECT_EQ(r.state.epoch, 2);
  EXPECT_DOUBLE_EQ(r.last_train.at("train/lr"), 0.025);
  for (const auto& p : module.parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  // The csv tracker takes the new column as the jsonl does.
  std::ifstream csv(dir + "/metrics.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_TRUE(test::contains(header, "train/rollbacks")) << header;
}

// train.loss_reads: deferred (what a GPU gets by default) on the CPU: losses, metrics and the
// non-finite check stay tensors until a log event or the window's end.
std::vector<double> logged_train_losses(const std::string& dir) {
  std::ifstream jsonl(dir + "/metrics.jsonl");
  std::vector<double> out;
  for (std::string line; std::getline(jsonl, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("train/loss")) out.push_back(j["train/loss"].get<double>());
  }
  return out;
}

TEST(Trainer, DeferredLossReadsTrainAndLogTheSameRun) {
  auto data = regression_data(64);
  const std::string dir = test::temp_dir();
  Config now = base_config(dir + "/now");
  now.set("train.loss_reads", "immediate");
  now.set("train.accumulation_steps", "2");
  Config later = now.clone();
  later.set("run_dir", dir + "/later");
  later.set("train.loss_reads", "deferred");
  expect_equal_params(fit_params(now, data), fit_params(later, data), 0);
  const auto a = logged_train_losses(dir + "/now"), b = logged_train_losses(dir + "/later");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);  // bit for bit
}

TEST(Trainer, DeferredLossReadsStopOnNonFiniteLossNamingTheStep) {
  Config c = base_config(test::temp_dir() + "/run");
  c.set("train.loss_reads", "deferred");
  Trainer trainer(c);
  Regression module;
  module.poison_at = 3;
  try {
    trainer.fit(module, regression_data(64));
    FAIL() << "expected a TrainError";
  } catch (const TrainError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite loss at step 3"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("nan"), std::string::npos) << e.what();
  }
}

TEST(Trainer, DeferredLossReadsStopAtTheNextLogValidationOrSaveNamingTheStep) {
  // Deferred, a loss is not read at its step: the non-finite check waits on the device until
  // something would show the weights — here step 5's save, which is then not written — and the
  // error names the step it happened at. Read immediately, the run stops at the step itself.
  struct WhenSeen : Callback {
    int64_t step = -1, seen_at = -1;
    void on_nonfinite(Trainer& t, const NonFinite& what) override {
      step = what.step;
      seen_at = t.state().step;
    }
  };
  for (const char* reads : {"immediate", "deferred"}) {
    const std::string dir = test::temp_dir() + "/" + reads;
    Config c = base_config(dir, "checkpoint: {every: 5 steps, keep_last: 10}\n");
    c.set("train.loss_reads", reads);
    c.set("train.log_every", "10 steps");
    Trainer trainer(c);
    auto seen = std::make_shared<WhenSeen>();
    trainer.add_callback(seen);
    Regression module;
    module.poison_at = 3;
    const std::string m = test::message_of([&] { trainer.fit(module, regression_data(64)); });
    EXPECT_TRUE(test::contains(m, "non-finite loss at step 3")) << reads << ": " << m;
    EXPECT_EQ(seen->step, 3) << reads;
    EXPECT_EQ(seen->seen_at, std::string(reads) == "deferred" ? 5 : 2) << reads;
    EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoints/step-5")) << reads;
  }
}

TEST(Trainer, DeferredLossReadsSkipABadWindowWithoutReadingEachLoss) {
  // Accumulation 2, the 3rd micro-batch's loss NaN: the 2nd window is skipped either way.
  // Read immediately, the window's later backwards are left out; deferred, the host does not
  // know until the window's end, so they run, and their gradients go with the skipped update.
  struct Backwards : Callback {
    int n = 0;
    void on_before_backward(Trainer&, const torch::Tensor&) override { ++n; }
  };
  auto data = regression_data(64);
  std::vector<std::vector<torch::Tensor>> params;
  std::vector<int> backwards;
  for (const char* reads : {"immediate", "deferred"}) {
    Config c = base_config(test::temp_dir() + "/" + reads);
    c.set("train.loss_reads", reads);
    c.set("train.on_nonfinite", "skip");
    c.set("train.accumulation_steps", "2");
    Trainer trainer(c);
    auto counter = std::make_shared<Backwards>();
    trainer.add_callback(counter);
    Regression module;
    module.poison_at = 3;
    FitResult r = trainer.fit(module, data);
    EXPECT_EQ(r.state.skipped_steps, 1) << reads;
    EXPECT_EQ(r.state.step, 8) << reads;
    backwards.push_back(counter->n);
    params.emplace_back();
    for (const auto& p : module.parameters()) params.back().push_back(p.detach().clone());
  }
  EXPECT_EQ(backwards[0], 16 - 2);
  EXPECT_EQ(backwards[1], 16);
  expect_equal_params(params[0], params[1], 0);
}

TEST(Trainer, StepAndSampleLengths) {
  auto data = regression_data(64);
  Config c = base_config(test::temp_dir() + "/a");
  c.set("train.max_length", "5 steps");
  FitResult r;
  fit_params(c, data, &r);
  EXPECT_EQ(r.state.step, 5);
  c.set("train.max_length", "100 samples");
  fit_params(c, data, &r);
  EXPECT_EQ(r.state.samples, 104);  // 13 batches of 8: the first step reaching 100
}

TEST(Trainer, TestModeRunsOneBatchOfEach) {
  Config c = base_config(test::temp_dir() + "/a");
  c.set("train.test_mode", "true");
  FitResult r;
  fit_params(c, regression_data(64), &r);
  EXPECT_EQ(r.state.step, 1);
  EXPECT_TRUE(r.last_val.count("val/loss"));
}

TEST(Trainer, CallbacksSeeEveryEventAndCanStop) {
  struct Counter : Callback {
    int starts = 0, ends = 0, epochs = 0, steps = 0, vals = 0;
    void on_train_start(Trainer&) override { ++starts; }
    void on_train_end(Trainer&) override { ++ends; }
    void on_epoch_end(Trainer&) override { ++epochs; }
    void on_step_end(Trainer& t, const MetricMap& m) override {
      ++steps;
      EXPECT_TRUE(m.count("train/loss"));
      if (t.state().step == 11) t.request_stop();
    }
    void on_validation_end(Trainer&, const MetricMap&) override { ++vals; }
  };
  auto counter = std::make_shared<Counter>();
  Trainer trainer(base_config(test::temp_dir() + "/a"));
  trainer.add_callback(counter);
  Regression module;
  auto data = regression_data(64);
  FitResult r = trainer.fit(module, data, data);
  EXPECT_EQ(r.state.step, 11);
  EXPECT_EQ(counter->starts, 1);
  EXPECT_EQ(counter->ends, 1);
  EXPECT_EQ(counter->steps, 11);
  EXPECT_EQ(counter->epochs, 1);
  EXPECT_EQ(counter->vals, 2);  // after epoch 1, and at the end
}

TEST(Trainer, OnStepEndGetsTheLossOnlyWhereItCostsNoWaitOrACallbackReadsIt) {
  // Deferred reads (a GPU's default): a step's loss is read for on_step_end only when some
  // callback reads step values (the default of a callback); one that says it does not gets an
  // empty map, and nothing waits for the device.
  struct Steps : Callback {
    bool reads = true;
    std::vector<size_t> sizes;
    bool reads_step_values() const override { return reads; }
    void on_step_end(Trainer&, const MetricMap& m) override {
      sizes.push_back(m.count("train/loss"));
    }
  };
  for (const std::string reads : {"immediate", "deferred"}) {
    for (bool callback_reads : {true, false}) {
      Config c = base_config(test::temp_dir() + "/run", "checkpoint: {enabled: false}\n");
      c.set("train.loss_reads", reads);
      c.set("train.max_length", "3 steps");
      Trainer trainer(c);
      auto steps = std::make_shared<Steps>();
      steps->reads = callback_reads;
      trainer.add_callback(steps);
      Regression module;
      trainer.fit(module, regression_data(64));
      const size_t expected = callback_reads || reads == "immediate" ? 1 : 0;
      EXPECT_EQ(steps->sizes, std::vector<size_t>(3, expected)) << reads << callback_reads;
    }
  }
}

TEST(Trainer, BadSetupFailsBeforeTraining) {
  auto data = regression_data(64);
  Config c = base_config(test::temp_dir() + "/a");
  c.set("train.global_batch_size", "24");
  c.set("train.accumulation_steps", "2");
  Trainer trainer(c);
  Regression module;
  EXPECT_THROW(trainer.fit(module, data), ConfigError);
  EXPECT_EQ(module.calls, 0);
  EXPECT_THROW(Trainer(base_config("/proc/unitrain-cannot-write")).fit(module, data), ConfigError);
  EXPECT_THROW(Trainer(Config::from_string("optimizer: {lr: -1}\n")), ConfigError);
}

}  // namespace unitrain

namespace unitrain {
namespace {

/// A module that steps its own optimizer (manual optimization).
struct StepsItsOwn : Regression {
  void configure_optimizers(OptimizerSetup& setup) override {
    setup.add("own", std::make_unique<torch::optim::SGD>(parameters(), 0.1));
  }
  StepOutput training_step(const Batch& b) override {
    StepOutput out = Regression::training_step(b);
    run().backward(out.loss);
    run().optimizer("own").step();
    run().optimizer("own").zero_grad();
    return out;
  }
};

TEST(Trainer, EveryRefusalComesBeforeAnEarlierRunsFilesMove) {
  const std::string dir = test::temp_dir();
  {
    Trainer trainer(base_config(dir));
    Regression module;
    trainer.fit(module, regression_data(32));
  }
  const auto metrics = [&] {
    std::ifstream in(dir + "/metrics.jsonl");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string before = metrics();
  // Each is refused only once the optimizers are built; a new start (resume: none) moves an
  // earlier run to history/, which must not happen before.
  const auto refused = [&](const std::vector<std::pair<std::string, std::string>>& keys,
                           TrainModule& module, const std::string& why) {
    Config c = base_config(dir);
    c.set("checkpoint.resume", "none");
    for (const auto& [key, value] : keys) c.set(key, value);
    Trainer trainer(c);
    const std::string message =
        test::config_error_of([&] { trainer.fit(module, regression_data(32)); });
    EXPECT_TRUE(test::contains(message, why)) << message;
    EXPECT_FALSE(std::filesystem::exists(dir + "/history")) << why;
    EXPECT_EQ(metrics(), before) << why;
  };
  Regression plain;
  refused({{"optimizer.type", "lbfgs"}, {"train.precision", "bf16-true"}}, plain,
          "re-evaluates the loss in its step");
  StepsItsOwn own;
  refused({{"train.accumulation_steps", "2"}}, own, "the module steps its own optimizers");
  // (On the CPU, or a build without CUDA, train.cuda_graphs is refused with the reason.)
  refused({{"train.cuda_graphs", "true"}}, plain, "train.cuda_graphs: true cannot capture");
}

TEST(Trainer, WarnsOnceOfConfigKeysTheProgramNeverRead) {
  // A C++ program that builds its own model and data: model.type and data.collate do nothing.
  Config config =
      Config::from_string("run_dir: " + test::temp_dir() +
                          "\n"
                          "model: {type: mlp, args: {sizes: [4, 1]}}\n"
                          "optimizer: {type: sgd, lr: 0.05}\n"
                          "data: {collate: {type: pad}, loader: {batch_size: 8, workers: 0}}\n"
                          "checkpoint: {enabled: false}\n"
                          "train: {max_length: 1 epoch}\n");
  config.set("data.validation_ratio", "0.3");  // a key set in code counts as the text's do
  config.set("train.log_every", "2 steps");    // and one that fit() reads does not warn
  Trainer trainer(config);
  Regression module;
  testing::internal::CaptureStderr();
  trainer.fit(module, regression_data(32));
  trainer.fit(module, regression_data(32));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(test::contains(err, "model.type")) << err;
  EXPECT_TRUE(test::contains(err, "data.collate.type")) << err;
  EXPECT_EQ(err.find("model.type"), err.rfind("model.type")) << "warned once: " << err;
  EXPECT_FALSE(test::contains(err, "optimizer.type")) << err;  // fit() built it
  EXPECT_TRUE(test::contains(err, "data.validation_ratio")) << err;
  EXPECT_FALSE(test::contains(err, "train.log_every")) << err;
}

/// A program's own dataset with one example of another shape (index 28).
struct OneOddExample : Dataset {
  int64_t size() const override { return 40; }
  Batch get(int64_t i) const override {
    return Batch{{"x", torch::ones({i == 28 ? 5 : 4})}, {"y", torch::tensor(1.0f)}};
  }
};

TEST(Trainer, ABadExampleMetWhileTrainingIsNamedByItsIndexAndRecorded) {
  const std::string dir = test::temp_dir() + "/odd";
  Trainer trainer(base_config(dir));
  Regression module;
  const std::string m =
      test::config_error_of([&] { trainer.fit(module, std::make_shared<OneOddExample>()); });
  EXPECT_TRUE(test::contains(m,
                             "[4] (the dataset's example 24) vs [5] (the dataset's example "
                             "28)"))
      << m;
  // Met while training (step 3): the run's failure, in train.log and the summary.
  std::ifstream log_file(dir + "/train.log");
  const std::string log((std::istreambuf_iterator<char>(log_file)),
                        std::istreambuf_iterator<char>());
  EXPECT_TRUE(test::contains(log, "the dataset's example 28")) << log;
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/results/summary.json"));
  EXPECT_TRUE(test::contains(summary["status"].get<std::string>(), "failed: ")) << summary.dump();
}

TEST(Trainer, AProgramsOwnModuleIsNotStoppedByAModelSectionItNeverReads) {
  // model.args.sizes is required by the mlp; this program builds its own module.
  const std::string dir = test::temp_dir() + "/run";
  const std::string text = "run_dir: " + dir +
                           "\nmodel: {type: mlp}\n"
                           "data: {loader: {batch_size: 8, workers: 0}}\n"
                           "train: {max_length: 1 epoch}\n";
  testing::internal::CaptureStderr();
  Trainer trainer(Config::from_string(text));
  Regression module;
  EXPECT_EQ(trainer.fit(module, regression_data(32)).state.step, 4);
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(test::contains(out, "model.args.sizes")) << out;
  EXPECT_TRUE(test::contains(out, "a program that builds its own module does not use them")) << out;
  std::ifstream saved(dir + "/config.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(test::contains(yaml, "type: mlp")) << yaml;  // kept as given
  // Anything else wrong is still the error it was.
  EXPECT_THROW(Trainer(Config::from_string(text + "optimizer: {lr: -1}\n")), ConfigError);
}

TEST(Trainer, DeterministicRunsAskLibTorchForDeterministicAlgorithms) {
  auto fit_logging = [](const std::string& deterministic) {
    Config c = base_config(test::temp_dir() + "/det-" + deterministic);
    c.set("train.max_length", "2 steps");
    if (!deterministic.empty()) c.set("train.deterministic", deterministic);
    Trainer trainer(c);
    Regression module;
    testing::internal::CaptureStderr();
    trainer.fit(module, regression_data(32));
    return testing::internal::GetCapturedStderr();
  };
  std::string out = fit_logging("true");
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
  EXPECT_TRUE(at::globalContext().deterministicCuDNN());
  EXPECT_TRUE(test::contains(out, "device: cpu\ndeterministic: on\n")) << out;
  EXPECT_FALSE(test::contains(out, "peak cpu")) << out;  // a device peak only for a GPU
  out = fit_logging("");  // the default: LibTorch's own choices again
  EXPECT_FALSE(at::globalContext().deterministicAlgorithms());
  EXPECT_FALSE(at::globalContext().deterministicCuDNN());
  EXPECT_TRUE(test::contains(out, "device: cpu\n")) << out;
  EXPECT_FALSE(test::contains(out, "deterministic")) << out;
}

}  // namespace
}  // namespace unitrain
