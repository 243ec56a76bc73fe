#include "unitrain/engine/callbacks/grad_norm.h"

#include <torch/torch.h>

#include <cmath>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {

void GradNormOptions::declare(Options<GradNormOptions>& o) {
  o.field("per_parameter", &GradNormOptions::per_parameter)
      .help("also log train/grad_norm/<parameter> for each parameter tensor");
}

void GradNorm::on_before_clip(Trainer& trainer) {
  if (!options_.per_parameter) return;
  for (const auto& p : trainer.module()->weights().named_parameters()) {
    const torch::Tensor& g = p.value().grad();
    if (g.defined()) trainer.log_mean("grad_norm/" + p.key(), g.norm().item<double>());
  }
}

void GradNorm::on_after_clip(Trainer& trainer, double norm) {
  if (norm < 0 && !std::isnan(norm)) {  // not measured by the step: measure it here
    std::vector<torch::Tensor> norms;
    for (const auto& p : trainer.module()->weights().parameters()) {
      if (p.grad().defined()) norms.push_back(p.grad().norm());
    }
    norm = norms.empty() ? 0.0 : torch::stack(norms).norm().item<double>();
  }
  if (std::isfinite(norm)) trainer.log_mean("grad_norm", norm);  // else the update is skipped
}

void register_grad_norm_callback() {
  register_callback<GradNorm, GradNormOptions>(
      "grad_norm", "log the gradient norm before clipping (and per parameter on request)");
}

}  // namespace unitrain
