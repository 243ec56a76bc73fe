// LossScaler against the scale sequences of PyTorch's GradScaler (make_loss_scaler_expected.py).
#include "unitrain/precision/loss_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

nlohmann::json scaler_expected() {
  std::ifstream in(test::source_dir() + "/tests/precision/loss_scaler_expected.json");
  return nlohmann::json::parse(in);
}

TEST(LossScaler, DefaultsAreGradScalers) {
  const auto d = scaler_expected()["gradscaler_defaults"];
  const LossScalerOptions o;
  EXPECT_EQ(o.init_scale, d["init_scale"].get<double>());
  EXPECT_EQ(o.growth_factor, d["growth_factor"].get<double>());
  EXPECT_EQ(o.backoff_factor, d["backoff_factor"].get<double>());
  EXPECT_EQ(o.growth_interval, d["growth_interval"].get<int64_t>());
  EXPECT_EQ(LossScaler().scale(), 65536.0f);
}

TEST(LossScaler, ScaleSequencesMatchPyTorchsUpdate) {
  for (const auto& c : scaler_expected()["updates"]) {
    LossScalerOptions o;
    o.init_scale = c["init_scale"].get<double>();
    o.growth_factor = c["growth_factor"].get<double>();
    o.backoff_factor = c["backoff_factor"].get<double>();
    o.growth_interval = c["growth_interval"].get<int64_t>();
    LossScaler scaler(o);
    const auto& found = c["found_inf"];
    for (size_t i = 0; i < found.size(); ++i) {
      scaler.update(found[i].get<bool>());
      EXPECT_EQ(scaler.scale(), c["expected"][i][0].get<float>())
          << "init " << o.init_scale << " step " << i;
      EXPECT_EQ(scaler.growth_tracker(), c["expected"][i][1].get<int64_t>()) << "step " << i;
    }
  }
}

TEST(LossScaler, UnscaleMultipliesByTheFloatInverseAndFindsInfAndNan) {
  for (const auto& c : scaler_expected()["unscale"]) {
    LossScalerOptions o;
    o.init_scale = c["scale"].get<double>();
    LossScaler scaler(o);
    torch::Tensor w = torch::zeros({5}, torch::requires_grad());
    w.mutable_grad() = torch::tensor(c["grads"].get<std::vector<float>>());
    EXPECT_FALSE(scaler.unscale({w}));
    const auto want = c["unscaled"].get<std::vector<float>>();
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(w.grad()[i].item<float>(), want[size_t(i)]) << i;
  }
  LossScaler scaler;
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  torch::Tensor b = torch::zeros({2}, torch::requires_grad());
  torch::Tensor none = torch::zeros({2}, torch::requires_grad());  // no gradient: ignored
  a.mutable_grad() = torch::tensor({1.0f, 2.0f});
  b.mutable_grad() = torch::tensor({std::numeric_limits<float>::infinity(), 2.0f});
  EXPECT_TRUE(scaler.unscale({a, none, b}));
  b.mutable_grad() = torch::tensor({std::numeric_limits<float>::quiet_NaN(), 2.0f});
  EXPECT_TRUE(scaler.unscale({a, b}));
  EXPECT_EQ(a.grad()[1].item<float>(), 2.0f / 65536.0f / 65536.0f);  // unscaled each call
}

TEST(LossScaler, ScaleLossMultiplies) {
  LossScaler scaler;
  EXPECT_EQ(scaler.scale_loss(torch::tensor(0.25f)).item<float>(), 16384.0f);
}

TEST(LossScaler, StateRoundTripsAsGradScalersStateDict) {
  LossScalerOptions o;
  o.growth_interval = 5;
  LossScaler a(o);
  for (bool f : {false, true, false, false}) a.update(f);
  const auto j = nlohmann::json::parse(a.state_json());
  for (const char* key :
       {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["scale"].get<double>(), 32768.0);
  EXPECT_EQ(j["_growth_tracker"].get<int64_t>(), 2);
  LossScaler b(o);
  b.load_state_json(a.state_json(), "loss_scaler.json");
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.growth_tracker(), a.growth_tracker());
  for (bool f : {false, false, false, true, false}) {
    a.update(f);
    b.update(f);
    EXPECT_EQ(a.scale(), b.scale());
  }
  const std::string m =
      test::error_of<TrainError>([&] { b.load_state_json("[1]", "ck/loss_scaler.json"); });
  EXPECT_TRUE(test::contains(m, "ck/loss_scaler.json")) << m;
  EXPECT_TRUE(test::contains(test::error_of<TrainError>([&] {
                               b.load_state_json(R"({"scale": -1, "_growth_tracker": 0})", "x");
                             }),
                             "positive"));
}

}  // namespace
}  // namespace unitrain
