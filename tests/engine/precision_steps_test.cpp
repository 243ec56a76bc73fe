// The Trainer under train.precision: loss scaling in the step (overflow skips, back-off,
// growth, exact resume), bf16-mixed and bf16-true runs that learn and resume bitwise.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace {

using test::regression_data;

// The regression fixture's run with this `train` section (its keys inside the braces).
Config run_config(const std::string& dir, const std::string& train, const std::string& extra = "") {
  return Config::from_string("run_dir: " + dir + "\n" +
                             "optimizer: {type: sgd, lr: 0.05}\n"
                             "data: {loader: {batch_size: 8, workers: 0, shuffle: false}}\n"
                             "log: {trackers: [jsonl]}\n"
                             "train: {log_every: 1 step, " +
                             train + "}\n" + extra);
}

// The regression module with a gradient that overflows on chosen training steps (the hook
// multiplies it by infinity), as a float16 gradient does when the loss scale is too high.
struct Overflowing : test::Regression {
  std::vector<int64_t> overflow_at;
  Overflowing() {
    fc->weight.register_hook([this](torch::Tensor g) {
      const bool hit =
          std::find(overflow_at.begin(), overflow_at.end(), calls) != overflow_at.end();
      return hit ? g * std::numeric_limits<float>::infinity() : g;
    });
  }
};

// fp16-mixed's loss scaling without autocast: what the CPU can run of it.
class ScalingTrainer : public Trainer {
 public:
  using Trainer::Trainer;
  std::unique_ptr<Precision> configure_precision(torch::nn::Module& weights) override {
    return Precision::loss_scaling_only(weights, options().loss_scaler);
  }
};

struct PrecisionRun {
  std::vector<torch::Tensor> params;
  FitResult result;
  std::vector<nlohmann::json> lines;  // metrics.jsonl
};

template <typename T = Trainer>
PrecisionRun fit_run(const Config& config, std::vector<int64_t> overflow_at = {}) {
  T trainer(config);
  Overflowing module;
  module.overflow_at = std::move(overflow_at);
  auto data = regression_data(64);
  PrecisionRun r;
  r.result = trainer.fit(module, data, data);
  for (const auto& p : module.parameters())
    r.params.push_back(p.detach().to(torch::kFloat32).clone());
  std::ifstream in(trainer.run_dir() + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) r.lines.push_back(nlohmann::json::parse(line));
  return r;
}

bool same_params(const PrecisionRun& a, const PrecisionRun& b) {
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (!torch::equal(a.params[i], b.params[i])) return false;
  }
  return a.params.size() == b.params.size();
}

TEST(PrecisionSteps, PowerOfTwoLossScalingChangesNoBitWithoutOverflow) {
  const PrecisionRun plain = fit_run(run_config(test::temp_dir() + "/a", "max_length: 2 epochs"));
  const PrecisionRun scaled =
      fit_run<ScalingTrainer>(run_config(test::temp_dir() + "/b", "max_length: 2 epochs"));
  EXPECT_TRUE(same_params(plain, scaled));
  EXPECT_EQ(scaled.lines.front()["train/loss_scale"].get<double>(), 65536.0);
  EXPECT_FALSE(plain.lines.front().contains("train/loss_scale"));
}

TEST(PrecisionSteps, AnOverflowSkipsTheStepBacksOffAndGrowthFollows) {
  const PrecisionRun r = fit_run<ScalingTrainer>(
      run_config(test::temp_dir() + "/o", "max_length: 8 steps, loss_scaler: {growth_interval: 3}"),
      {2, 3});
  // Steps 2 and 3 overflow: scale 65536 -> 32768 -> 16384, then 3 good steps double it.
  std::vector<double> scales;
  double skipped_logged = 0;
  for (const auto& j : r.lines) {
    if (j.contains("train/loss_scale")) scales.push_back(j.at("train/loss_scale").get<double>());
    if (j.contains("train/skipped_steps"))
      skipped_logged = j.at("train/skipped_steps").get<double>();
  }
  const std::vector<double> want{65536, 32768, 16384, 16384, 16384, 32768, 32768, 32768};
  EXPECT_EQ(scales, want);
  EXPECT_EQ(r.result.state.skipped_steps, 2);
  EXPECT_EQ(skipped_logged, 2.0);
  // The run went on: finite parameters that learned.
  for (const auto& p : r.params) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  EXPECT_LT(r.result.last_val.at("val/loss"), 5.0);
}

// A run stopped at step 5 and resumed equals the run trained straight through, bit for bit.
template <typename T = Trainer>
void expect_exact_resume(const std::string& train_yaml, std::vector<int64_t> overflow_at = {}) {
  const std::string ckpt = "checkpoint: {every: 3 steps}\n";
  const PrecisionRun straight =
      fit_run<T>(run_config(test::temp_dir() + "/s", "max_length: 12 steps, " + train_yaml, ckpt),
                 overflow_at);
  const std::string dir = test::temp_dir() + "/r";
  std::vector<int64_t> before, after;
  for (int64_t k : overflow_at) (k <= 5 ? before : after).push_back(k - 5 * (k > 5));
  fit_run<T>(run_config(dir, "max_length: 5 steps, " + train_yaml, ckpt), before);
  const PrecisionRun resumed =
      fit_run<T>(run_config(dir, "max_length: 12 steps, " + train_yaml, ckpt), after);
  EXPECT_EQ(resumed.result.resumed_from.substr(resumed.result.resumed_from.size() - 6), "step-5");
  EXPECT_TRUE(same_params(straight, resumed)) << train_yaml;
  EXPECT_EQ(straight.result.last_val.at("val/loss"), resumed.result.last_val.at("val/loss"));
  EXPECT_EQ(straight.result.state.skipped_steps, resumed.result.state.skipped_steps);
}

TEST(PrecisionSteps, LossScalerStateResumesExactly) {
  expect_exact_resume<ScalingTrainer>("loss_scaler: {growth_interval: 2}", {4, 8});
}

TEST(PrecisionSteps, Bf16MixedLearnsAndResumesExactly) {
  const PrecisionRun r =
      fit_run(run_config(test::temp_dir() + "/m", "max_length: 2 epochs, precision: bf16-mixed"));
  EXPECT_LT(r.result.last_val.at("val/loss"), 1.0);
  for (const auto& p : r.params) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  const PrecisionRun fp32 = fit_run(run_config(test::temp_dir() + "/f", "max_length: 2 epochs"));
  EXPECT_FALSE(same_params(r, fp32));  // the forward did run in bfloat16
  expect_exact_resume("precision: bf16-mixed");
}

TEST(PrecisionSteps, Bf16TrueLearnsSavesFloat32AndResumesExactly) {
  const std::string dir = test::temp_dir() + "/t";
  const PrecisionRun r = fit_run(run_config(dir, "max_length: 2 epochs, precision: bf16-true"));
  EXPECT_LT(r.result.last_val.at("val/loss"), 1.0);
  // The checkpoint holds the float32 masters, which the bfloat16 model only approximates.
  const NamedTensors saved =
      load_tensor_dict(CheckpointStore::read(r.result.last_checkpoint, "model.pt"), "model.pt");
  ASSERT_EQ(saved.size(), r.params.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(saved[i].second.scalar_type(), torch::kFloat32) << saved[i].first;
    EXPECT_TRUE(
        torch::equal(saved[i].second.to(torch::kBFloat16).to(torch::kFloat32), r.params[i]));
  }
  expect_exact_resume("precision: bf16-true");
}

}  // namespace
}  // namespace unitrain
