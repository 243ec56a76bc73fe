// StepRunner's checks of a step's numbers: non-finite losses and gradient norms (on_nonfinite,
// read at once or kept on the device for check_nonfinite()) and loss spikes (train.divergence).
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/engine/step/step_runner.h"
#include "unitrain/log/console.h"

namespace unitrain {

void StepRunner::nonfinite(const std::string& what, int64_t step, const MicroStep& m, bool stops) {
  NonFinite info;
  info.step = step;
  info.what = what;
  info.loss = m.loss_value();
  info.grad_norm = m.grad_norm;
  info.stops = stops;
  hooks_.call("on_nonfinite", &Callback::on_nonfinite, info);
  if (stops) throw_nonfinite(what, step, m);
}

void StepRunner::throw_nonfinite(const std::string& what, int64_t step, const MicroStep& m) {
  std::ostringstream terms;
  for (const auto& [k, v] : m.metrics) terms << " " << k << "=" << v.value.item<double>();
  throw TrainError(
      "non-finite " + what + " at step " + std::to_string(step) +
      ": loss=" + std::to_string(m.loss_value()) + (m.metrics.empty() ? "" : ";" + terms.str()) +
      (m.grad_norm >= 0 || std::isnan(m.grad_norm) ? "; grad_norm=" + std::to_string(m.grad_norm)
                                                   : "") +
      (optimizer_ ? ". Lower optimizer.lr, set train.clip_grad_norm, check the data, or set "
                    "train.on_nonfinite: skip to skip such updates"
                  : ". The module steps its own optimizers (manual optimization): lower the "
                    "learning rates configure_optimizers gives them, clip the gradients before "
                    "their step (torch::nn::utils::clip_grad_norm_), or check the data"));
}

void StepRunner::on_nonfinite(const std::string& what, int64_t step, MicroStep& m) {
  nonfinite(what, step, m, options_.on_nonfinite == OnNonFinite::Stop);
  if (options_.on_nonfinite == OnNonFinite::Rollback) {
    m.rollback = fmt::format("non-finite {} at step {} (loss {})", what, step, m.loss_value());
  }
}

bool StepRunner::checks_nonfinite_late() const {
  return defer_reads_ && options_.on_nonfinite == OnNonFinite::Stop && !sync_.shares_decisions() &&
         !(guard_ && guard_->watches_spikes());
}

void StepRunner::watch(DivergenceGuard* guard) {
  guard_ = guard;
  UT_CHECK(!(closure_ && guard_->watches_spikes()),
           "train.divergence.spike_factor does not work with optimizer.type: lbfgs (its loss is "
           "computed inside its step); unset it, or use another optimizer");
}

void StepRunner::check_spike(MicroStep& m, int64_t step) {
  const std::string why = guard_->spike(m.decision.loss);
  if (why.empty()) return;
  const std::string what = fmt::format("loss spike at step {}: {}", step, why);
  switch (guard_->options().action) {
    case SpikeAction::Stop:
      throw TrainError(what +
                       ". Lower optimizer.lr, set train.clip_grad_norm, or set "
                       "train.divergence.action: rollback (or skip)");
    case SpikeAction::Skip:
      log::warn(what + ": the update is skipped (train.divergence.action: skip)");
      break;
    case SpikeAction::Rollback:
      m.rollback = what;
      break;
  }
  m.skipped = true;
}

}  // namespace unitrain
