// GradNorm: the norm before clipping, summed on the device and read at log time; the same
// numbers whether the loop reads each step's values at once or defers them.
#include "unitrain/engine/callbacks/grad_norm.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/regression_fixture.h"
#include "test_util.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

/// The pre-clip norm of each step, measured the way LibTorch's clip_grad_norm_ reports it.
struct Measure : Callback {
  std::vector<double> norms;
  bool reads_step_values() const override { return false; }
  void on_before_clip(Trainer& t) override {
    std::vector<torch::Tensor> params = t.module()->weights().parameters();
    std::vector<torch::Tensor> copies;
    for (const auto& p : params) {
      torch::Tensor c = p.detach().clone().requires_grad_(true);
      c.mutable_grad() = p.grad().clone();
      copies.push_back(c);
    }
    norms.push_back(torch::nn::utils::clip_grad_norm_(copies, 1e9));
  }
};

std::vector<nlohmann::json> events(const std::string& dir) {
  std::ifstream jsonl(dir + "/metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(jsonl, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("train/grad_norm")) out.push_back(j);
  }
  return out;
}

TEST(GradNorm, LogsTheMeanNormBeforeClippingReadOnlyAtLogTime) {
  const std::string dir = test::temp_dir();
  std::map<std::string, std::vector<nlohmann::json>> logged;
  std::vector<double> measured;
  for (const std::string reads : {"immediate", "deferred"}) {
    Config c = test::base_config(dir + "/" + reads, "checkpoint: {enabled: false}\n");
    c.set("train.max_length", "6 steps");
    c.set("train.log_every", "3 steps");
    c.set("train.clip_grad_norm", "0.01");
    c.set("train.loss_reads", reads);
    Trainer trainer(c);
    GradNormOptions o;
    o.per_parameter = true;
    trainer.add_callback(std::make_shared<GradNorm>(o));
    auto measure = std::make_shared<Measure>();
    trainer.add_callback(measure);
    test::Regression module;
    trainer.fit(module, test::regression_data(64));
    logged[reads] = events(dir + "/" + reads);
    measured = measure->norms;
  }
  ASSERT_EQ(measured.size(), 6u);
  for (const auto& [reads, e] : logged) {
    ASSERT_EQ(e.size(), 2u) << reads;
    for (int k = 0; k < 2; ++k) {
      const double mean = (measured[3 * k] + measured[3 * k + 1] + measured[3 * k + 2]) / 3;
      EXPECT_NEAR(e[k]["train/grad_norm"].get<double>(), mean, 1e-6 * mean) << reads << k;
      EXPECT_GT(mean, 0.01);  // clipped afterwards: the logged norm is the one before
      EXPECT_TRUE(e[k].contains("train/grad_norm/fc.weight")) << e[k];
    }
  }
  EXPECT_EQ(logged["immediate"][1]["train/grad_norm"], logged["deferred"][1]["train/grad_norm"]);
}

}  // namespace
}  // namespace unitrain
