// StepRunner on its own (no Trainer drives it): the phases of a window in order, as a recording
// callback sees them, what accumulation computes, and non-finite losses under skip and stop.
#include "unitrain/engine/step/step_runner.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <limits>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/engine/step/module_error.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

/// Records the hooks the step runner calls, in order.
struct PhaseRecorder : Callback {
  std::vector<std::string> seen;
  void on_before_backward(Trainer&, const torch::Tensor&) override {
    seen.push_back("before_backward");
  }
  void on_after_backward(Trainer&) override { seen.push_back("after_backward"); }
  void on_before_gradient_sync(Trainer&) override { seen.push_back("before_sync"); }
  void on_after_gradient_sync(Trainer&) override { seen.push_back("after_sync"); }
  void on_before_clip(Trainer&) override { seen.push_back("before_clip"); }
  void on_after_clip(Trainer&, double) override { seen.push_back("after_clip"); }
  void on_before_optimizer_step(Trainer&, bool skipped) override {
    seen.push_back(skipped ? "before_step(skipped)" : "before_step");
  }
  void on_after_optimizer_step(Trainer&, bool) override { seen.push_back("after_step"); }
  void on_before_zero_grad(Trainer&) override { seen.push_back("before_zero_grad"); }
  void on_after_zero_grad(Trainer&) override { seen.push_back("after_zero_grad"); }
  void on_nonfinite(Trainer&, const NonFinite& n) override {
    seen.push_back("nonfinite " + n.what);
  }
};

/// A step runner over the regression module with SGD, fp32, one process. No Trainer drives it;
/// one is made only to record the hooks (they take the Trainer they observe).
struct RunnerRig {
  enum Hooks { kNone, kRecorded };
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<CallbackList> hooks;
  std::shared_ptr<PhaseRecorder> recorder = std::make_shared<PhaseRecorder>();
  test::Regression module;
  torch::optim::SGD sgd{module.parameters(), torch::optim::SGDOptions(0.1)};
  TrainOptions options;
  NoGradientSync sync;
  Precision precision{PrecisionMode::Fp32, module};
  std::unique_ptr<StepRunner> runner;

  explicit RunnerRig(OnNonFinite on_nonfinite = OnNonFinite::Stop, Hooks record = kRecorded) {
    if (record == kRecorded) {
      trainer = std::make_unique<Trainer>(test::base_config(test::temp_dir()));
      hooks = std::make_unique<CallbackList>(*trainer);
      hooks->add(recorder);
    } else {
      hooks = std::make_unique<CallbackList>();
    }
    options.on_nonfinite = on_nonfinite;
    runner = std::make_unique<StepRunner>(module, &sgd, options, sync, *hooks, precision);
  }
  /// One window of `batches` micro-batches, each weighted by its share.
  MicroStep window(const std::vector<Batch>& batches, int64_t step) {
    MicroStep m;
    for (size_t i = 0; i < batches.size(); ++i) {
      m = runner->forward_backward(batches[i], 1.0 / double(batches.size()),
                                   i + 1 == batches.size(), {}, step);
    }
    runner->sync_gradients(m, step);
    runner->clip_gradients(m, step);
    runner->update(m, step);
    return m;
  }
};

Batch batch_of(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  return {{"x", torch::randn({n, 4})}, {"y", torch::randn({n})}};
}

TEST(StepRunner, RunsItsPhasesInOrderAroundEachMicroBatchAndTheWindowsEnd) {
  RunnerRig rig;
  rig.window({batch_of(8, 1), batch_of(8, 2)}, 1);
  EXPECT_EQ(rig.recorder->seen,
            (std::vector<std::string>{"before_backward", "after_backward", "before_backward",
                                      "after_backward", "before_sync", "after_sync", "before_clip",
                                      "after_clip", "before_step", "after_step", "before_zero_grad",
                                      "after_zero_grad"}));
}

TEST(StepRunner, TwoMicroBatchesMakeTheUpdateOfOneBatchOfBoth) {
  RunnerRig accumulated(OnNonFinite::Stop, RunnerRig::kNone),
      whole(OnNonFinite::Stop, RunnerRig::kNone);
  torch::NoGradGuard no_grad;
  whole.module.fc->weight.copy_(accumulated.module.fc->weight);
  whole.module.fc->bias.copy_(accumulated.module.fc->bias);
  const Batch a = batch_of(8, 1), b = batch_of(8, 2);
  const Batch both{{"x", torch::cat({a.at("x"), b.at("x")})},
                   {"y", torch::cat({a.at("y"), b.at("y")})}};
  {
    torch::AutoGradMode grad(true);
    accumulated.window({a, b}, 1);
    whole.window({both}, 1);
  }
  EXPECT_TRUE(torch::allclose(accumulated.module.fc->weight, whole.module.fc->weight, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(accumulated.module.fc->bias, whole.module.fc->bias, 1e-6, 1e-6));
}

TEST(StepRunner, ANonFiniteLossSkipsTheUpdateOrStopsNamingTheStep) {
  RunnerRig skip(OnNonFinite::Skip);
  skip.module.poison_at = 1;
  const torch::Tensor before = skip.module.fc->weight.clone();
  const MicroStep m = skip.window({batch_of(8, 1)}, 7);
  EXPECT_TRUE(m.skipped);
  EXPECT_TRUE(torch::equal(skip.module.fc->weight, before));
  EXPECT_NE(std::find(skip.recorder->seen.begin(), skip.recorder->seen.end(), "nonfinite loss"),
            skip.recorder->seen.end());
  EXPECT_NE(
      std::find(skip.recorder->seen.begin(), skip.recorder->seen.end(), "before_step(skipped)"),
      skip.recorder->seen.end());

  RunnerRig stop(OnNonFinite::Stop, RunnerRig::kNone);
  stop.module.poison_at = 1;
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] { stop.window({batch_of(8, 1)}, 7); }),
                             "non-finite loss at step 7"));
}

TEST(StepRunner, DeferredStopReadsNoLossUntilAskedThenNamesTheFirstBadStep) {
  // train.loss_reads: deferred with on_nonfinite: stop in one process: a window's end reads
  // nothing (the update goes ahead); nonfinite().settle() reads the first bad step. Skip mode
  // still decides at each window's end.
  auto deferred = [](RunnerRig& rig) {
    rig.options.loss_reads = LossReads::Deferred;
    rig.runner = std::make_unique<StepRunner>(rig.module, &rig.sgd, rig.options, rig.sync,
                                              *rig.hooks, rig.precision);
  };
  RunnerRig stop(OnNonFinite::Stop, RunnerRig::kNone);
  deferred(stop);
  EXPECT_TRUE(stop.runner->checks_nonfinite_late());
  stop.runner->nonfinite().settle();  // nothing seen yet: nothing happens
  stop.module.poison_at = 2;
  stop.window({batch_of(8, 1)}, 1);
  EXPECT_FALSE(stop.window({batch_of(8, 2)}, 2).skipped);  // NaN, unread: the update ran
  stop.window({batch_of(8, 3)}, 3);
  const std::string e = test::error_of<TrainError>([&] { stop.runner->nonfinite().settle(); });
  EXPECT_TRUE(test::contains(e, "non-finite loss at step 2: loss=nan")) << e;

  RunnerRig skip(OnNonFinite::Skip, RunnerRig::kNone);
  deferred(skip);
  EXPECT_FALSE(skip.runner->checks_nonfinite_late());
  skip.module.poison_at = 1;
  EXPECT_TRUE(skip.window({batch_of(8, 1)}, 1).skipped);
}

/// Makes the weight's gradient infinite at step `at` (the loss stays finite); reads no step
/// values, so clipping's norm stays on the device.
struct PoisonGradient : Callback {
  int64_t at = -1, step = 0;
  bool reads = false;
  std::vector<double> norms;  ///< on_after_clip's
  torch::Tensor weight;
  bool reads_step_values() const override { return reads; }
  void on_after_backward(Trainer&) override {
    if (++step == at) weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
  }
  void on_after_clip(Trainer&, double norm) override { norms.push_back(norm); }
};

TEST(StepRunner, DeferredClippingKeepsTheNormOnTheDeviceAndANonFiniteOneForTheLateCheck) {
  for (bool reads : {false, true}) {
    RunnerRig rig(OnNonFinite::Stop, RunnerRig::kRecorded);
    auto poison = std::make_shared<PoisonGradient>();
    poison->at = 2;
    poison->reads = reads;
    poison->weight = rig.module.fc->weight;
    rig.hooks = std::make_unique<CallbackList>(*rig.trainer);
    rig.hooks->add(poison);
    rig.options.loss_reads = LossReads::Deferred;
    rig.options.clip_grad_norm = 0.5;
    rig.runner = std::make_unique<StepRunner>(rig.module, &rig.sgd, rig.options, rig.sync,
                                              *rig.hooks, rig.precision);
    ASSERT_TRUE(rig.runner->checks_nonfinite_late());
    const MicroStep first = rig.window({batch_of(8, 1)}, 1);
    ASSERT_TRUE(first.norm.defined());
    EXPECT_GT(first.norm.item<double>(), 0.0);
    if (!reads) {
      // Not read: the hook is told -1, the step goes on, the late check names the step.
      EXPECT_EQ(first.grad_norm, -1);
      EXPECT_FALSE(rig.window({batch_of(8, 2)}, 2).skipped);
      EXPECT_EQ(poison->norms, (std::vector<double>{-1, -1}));
      const std::string e = test::error_of<TrainError>([&] { rig.runner->nonfinite().settle(); });
      EXPECT_TRUE(test::contains(e, "non-finite gradient at step 2")) << e;
      EXPECT_TRUE(test::contains(e, "grad_norm=inf")) << e;
    } else {
      // A callback reads it: on the host at once, and the run stops at the step itself.
      EXPECT_EQ(first.grad_norm, first.norm.item<double>());
      const std::string e = test::error_of<TrainError>([&] { rig.window({batch_of(8, 2)}, 2); });
      EXPECT_TRUE(test::contains(e, "non-finite gradient at step 2")) << e;
    }
  }
}

TEST(StepRunner, TheStepBodyIsTheStepsPhasesWithoutHooks) {
  // What train.cuda_graphs captures, run eagerly: the update of a window's phases, with
  // clipping; no hook inside the step, the optimizer hooks after it (step_body_done).
  RunnerRig phases(OnNonFinite::Stop, RunnerRig::kNone), body(OnNonFinite::Stop);
  for (RunnerRig* rig : {&phases, &body}) {
    rig->options.clip_grad_norm = 0.05;
    rig->runner = std::make_unique<StepRunner>(rig->module, &rig->sgd, rig->options, rig->sync,
                                               *rig->hooks, rig->precision);
  }
  torch::NoGradGuard no_grad;
  body.module.fc->weight.copy_(phases.module.fc->weight);
  body.module.fc->bias.copy_(phases.module.fc->bias);
  for (int64_t step = 1; step <= 3; ++step) {
    torch::AutoGradMode grad(true);
    const MicroStep a = phases.window({batch_of(8, step)}, step);
    for (auto& p : body.module.parameters()) p.mutable_grad() = torch::Tensor();
    MicroStep b = body.runner->step_body(
        batch_of(8, step), [&] { body.sgd.step(); }, step);
    body.runner->step_body_done(b, {}, step);
    EXPECT_TRUE(torch::equal(a.loss, b.loss));
    ASSERT_TRUE(b.norm.defined());
    EXPECT_GT(b.norm.item<double>(), 0.05);  // clipped
  }
  EXPECT_TRUE(torch::equal(body.module.fc->weight, phases.module.fc->weight));
  EXPECT_TRUE(torch::equal(body.module.fc->bias, phases.module.fc->bias));
  EXPECT_EQ(body.recorder->seen,
            (std::vector<std::string>{"before_step", "after_step", "before_step", "after_step",
                                      "before_step", "after_step"}));
  // update() can step through another function (StepGraph's eager steps: its kernel).
  int calls = 0;
  body.runner->step_optimizer_with([&] {
    ++calls;
    body.sgd.step();
  });
  phases.runner->step_optimizer_with([&] {
    ++calls;
    phases.sgd.step();
  });
  {
    torch::AutoGradMode grad(true);
    phases.window({batch_of(8, 5)}, 4);
  }
  EXPECT_EQ(calls, 1);
  // A non-finite loss: immediate reads stop at the step, naming it.
  body.module.poison_at = body.module.calls + 1;
  torch::AutoGradMode grad(true);
  MicroStep bad = body.runner->step_body(
      batch_of(8, 9), [&] { body.sgd.step(); }, 4);
  const std::string e =
      test::error_of<TrainError>([&] { body.runner->step_body_done(bad, {}, 4); });
  EXPECT_TRUE(test::contains(e, "non-finite loss at step 4")) << e;
}

TEST(StepRunner, LeavesOutsideTheKnownTensorsAreFoundFromTheLoss) {
  const torch::Tensor w = torch::ones({3}).requires_grad_(true);
  const torch::Tensor stray = torch::ones({2, 3}).requires_grad_(true);
  const torch::Tensor anchor = torch::empty({0}).requires_grad_(true);  // empty: ignored
  const torch::Tensor loss = (w * stray).sum() + anchor.sum() + torch::ones({3}).sum();
  const auto found = leaves_outside(loss, {w});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].is_same(stray));
  EXPECT_TRUE(leaves_outside(loss, {w, stray}).empty());
  EXPECT_TRUE(leaves_outside(torch::ones({}), {}).empty());  // no graph
  EXPECT_EQ(stray_leaves_warning({}), "");
  const std::string warning = stray_leaves_warning(found);
  EXPECT_TRUE(test::contains(warning,
                             "1 tensor(s) that require grad reach the loss but are not "
                             "parameters of the module ([2, 3]; 6 elements)"))
      << warning;
  EXPECT_TRUE(test::contains(warning, "register_module(\"name\", layer)")) << warning;
}

/// The regression model with a second layer kept as a member but never registered.
struct ForgotRegisterModule : test::Regression {
  torch::nn::Linear extra{4, 1};
  StepOutput training_step(const Batch& b) override {
    const torch::Tensor pred = (fc->forward(b.at("x")) + extra->forward(b.at("x"))).squeeze(1);
    return {torch::mse_loss(pred, b.at("y")), {}};
  }
};

TEST(StepRunner, AForgottenRegisterModuleIsWarnedOfOnceWhileARegisteredModelIsNot) {
  const std::string dir = test::temp_dir();
  const auto train_log = [&] {
    std::ifstream in(dir + "/train.log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string config = "run_dir: " + dir +
                             "\noptimizer: {type: sgd, lr: 0.1}\n"
                             "data: {loader: {batch_size: 8, workers: 0}}\n"
                             "checkpoint: {enabled: false}\n"
                             "train: {max_length: 3 steps}\n";
  {
    Trainer trainer(Config::from_string(config));
    ForgotRegisterModule module;
    const torch::Tensor before = module.extra->weight.clone();
    trainer.fit(module, test::regression_data(32));
    EXPECT_TRUE(torch::equal(module.extra->weight, before));  // what the warning says
  }
  std::string text = train_log();
  const std::string needle =
      "[warning] 2 tensor(s) that require grad reach the loss but are not "
      "parameters of the module ([1, 4], [1]; 5 elements)";
  EXPECT_TRUE(test::contains(text, needle)) << text;
  EXPECT_EQ(text.find(needle), text.rfind(needle)) << text;  // once, not every step
  {
    Trainer trainer(Config::from_string(config));
    test::Regression module;
    trainer.fit(module, test::regression_data(32));
  }
  text = train_log();
  EXPECT_FALSE(test::contains(text, "require grad reach the loss")) << text;
}

}  // namespace
}  // namespace unitrain
