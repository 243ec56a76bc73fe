#include "unitrain/precision/precision_support.h"

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/precision/precision.h"

namespace unitrain {

PrecisionSupport closure_optimizer_precisions() {
  return {"an optimizer that re-evaluates the loss in its step (optimizer.type: lbfgs)",
          {PrecisionMode::Fp32, PrecisionMode::Bf16Mixed},
          "",
          ""};
}

PrecisionSupport zero2_precisions() {
  return {"distributed.zero: 2",
          {PrecisionMode::Fp32, PrecisionMode::Bf16Mixed},
          "its gradients go to float32 master weights or through a loss scaler that sees every "
          "gradient",
          "distributed.zero: 1"};
}

PrecisionSupport manual_optimization_precisions() {
  return {"a module that steps its own optimizers (configure_optimizers)",
          {PrecisionMode::Fp32, PrecisionMode::Bf16Mixed},
          "loss scaling and master weights need the Trainer's optimizer",
          ""};
}

void check_precision_support(PrecisionMode mode, const PrecisionSupport& support) {
  if (std::find(support.modes.begin(), support.modes.end(), mode) != support.modes.end()) return;
  std::string supported;
  for (size_t i = 0; i < support.modes.size(); ++i) {
    supported += (i == 0                          ? ""
                  : i + 1 == support.modes.size() ? " or "
                                                  : ", ") +
                 precision_name(support.modes[i]);
  }
  throw ConfigError(
      detail::concat("train.precision: ", precision_name(mode), " does not work with ",
                     support.component, support.reason.empty() ? "" : " (" + support.reason + ")",
                     "; use ", supported.empty() ? "another component" : supported,
                     support.alternative.empty() ? "" : ", or " + support.alternative));
}

void check_precision(PrecisionMode mode, c10::DeviceType device,
                     const std::vector<PrecisionSupport>& restrictions) {
  Precision::check(mode, device);
  for (const PrecisionSupport& r : restrictions) check_precision_support(mode, r);
}

}  // namespace unitrain
