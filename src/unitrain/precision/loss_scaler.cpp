#include "unitrain/precision/loss_scaler.h"

#include <torch/torch.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"

namespace unitrain {

void LossScalerOptions::declare(Options<LossScalerOptions>& o) {
  using T = LossScalerOptions;
  o.field("init_scale", &T::init_scale).gt(0).help("the first loss scale (2^16)");
  o.field("growth_factor", &T::growth_factor)
      .gt(1)
      .help("the scale is multiplied by this after growth_interval steps without inf/NaN");
  o.field("backoff_factor", &T::backoff_factor)
      .gt(0)
      .help(
          "the scale is multiplied by this (below 1) after a step with inf/NaN gradients, "
          "which is skipped");
  o.field("growth_interval", &T::growth_interval)
      .min(1)
      .help("steps in a row without inf/NaN gradients before the scale grows");
  o.check([](T& t, const Config& c) {
    UT_CHECK(t.backoff_factor < 1, c.key_path("backoff_factor"), " must be below 1, got ",
             t.backoff_factor);
  });
}

LossScaler::LossScaler(const LossScalerOptions& options)
    : options_(options), scale_(static_cast<float>(options.init_scale)) {}

torch::Tensor LossScaler::scale_loss(const torch::Tensor& loss) const {
  return loss * torch::scalar_tensor(scale_, loss.options().dtype(torch::kFloat32));
}

bool LossScaler::unscale(const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  torch::Tensor found;  // on the gradients' device: one host read at the end
  for (const auto& p : params) {
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    torch::Tensor bad = torch::isfinite(g).logical_not().any();
    found = found.defined() ? found.logical_or_(bad) : bad;
    g.mul_(inv_scale);
  }
  return found.defined() && found.item<bool>();
}

void LossScaler::update(bool found_inf) {
  // PyTorch's _amp_update_scale_: float32 scale times a double factor, stored as float32.
  if (found_inf) {
    scale_ = static_cast<float>(scale_ * options_.backoff_factor);
    growth_tracker_ = 0;
    return;
  }
  const int64_t successful = growth_tracker_ + 1;
  if (successful == options_.growth_interval) {
    const float grown = static_cast<float>(scale_ * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    growth_tracker_ = successful;
  }
}

std::string LossScaler::state_json() const {
  nlohmann::ordered_json j;
  j["scale"] = scale_;
  j["growth_factor"] = options_.growth_factor;
  j["backoff_factor"] = options_.backoff_factor;
  j["growth_interval"] = options_.growth_interval;
  j["_growth_tracker"] = growth_tracker_;
  return j.dump(1) + "\n";
}

void LossScaler::load_state_json(const std::string& text, const std::string& what) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  UT_CHECK_TRAIN(!j.is_discarded() && j.is_object() && j.contains("scale") &&
                     j["scale"].is_number() && j.contains("_growth_tracker") &&
                     j["_growth_tracker"].is_number_integer(),
                 what, " is not a loss scaler state (JSON with scale and _growth_tracker)");
  const double scale = j["scale"].get<double>();
  UT_CHECK_TRAIN(std::isfinite(scale) && scale > 0, what, ": the loss scale must be positive, got ",
                 scale);
  scale_ = static_cast<float>(scale);
  growth_tracker_ = j["_growth_tracker"].get<int64_t>();
}

}  // namespace unitrain
