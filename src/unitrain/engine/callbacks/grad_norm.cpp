#include "unitrain/engine/callbacks/grad_norm.h"

#include <torch/torch.h>

#include <cmath>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/optim/grad_clip.h"

namespace unitrain {

void GradNormOptions::declare(Options<GradNormOptions>& o) {
  o.field("per_parameter", &GradNormOptions::per_parameter)
      .help("also log train/grad_norm/<parameter> for each parameter tensor");
}

void GradNorm::on_before_clip(Trainer& trainer) {
  // Measured here, before clipping scales the gradients; a norm the step read on the host
  // (ZeRO's partitioned gradients: the global one) replaces the whole-norm in on_after_clip.
  pending_.clear();
  std::vector<torch::Tensor> norms;
  for (const auto& p : trainer.module()->weights().named_parameters()) {
    const torch::Tensor& g = p.value().grad();
    if (!g.defined()) continue;
    norms.push_back(norm_of_gradient(g));
    if (options_.per_parameter) pending_.emplace_back("grad_norm/" + p.key(), norms.back());
  }
  if (!norms.empty()) pending_.emplace_back("grad_norm", norm_of_norms(norms));
}

void GradNorm::on_after_clip(Trainer&, double norm) {
  if (norm < 0 && !std::isnan(norm)) return;  // not read on the host: the one measured before
  for (auto& [name, value] : pending_) {
    if (name == "grad_norm") value = torch::tensor(norm, torch::kFloat64);
  }
}

void GradNorm::on_after_optimizer_step(Trainer& trainer, bool skipped) {
  if (!skipped) {
    for (const auto& [name, value] : pending_) trainer.log_mean(name, value);
  }
  pending_.clear();
}

void register_grad_norm_callback() {
  register_callback<GradNorm, GradNormOptions>(
      "grad_norm", "log the gradient norm before clipping (and per parameter on request)");
}

}  // namespace unitrain
