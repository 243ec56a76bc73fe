#pragma once
// PrecisionSupport: the precisions a component works with, declared by the component, and the one
// check of a run's train.precision against all of them.
#include <torch/nn/module.h>

#include <string>
#include <vector>

#include "unitrain/precision/precision_mode.h"

namespace unitrain {

/// A restriction a component declares on `train.precision`: the modes it works with. The
/// component brings it (an optimizer that needs a closure, a parallel strategy, a model or a
/// callback that cannot run in some mode); check_precision() meets them all in one place.
struct PrecisionSupport {
  std::string component;             ///< as the config names it, e.g. "distributed.zero: 2"
  std::vector<PrecisionMode> modes;  ///< the modes it works with
  std::string reason;                ///< why the others do not work ("" = none given)
  std::string alternative;           ///< another way out besides those modes ("" = none)
};

/// The restriction of an optimizer that re-evaluates the loss inside its step (needs_closure():
/// lbfgs): fp32 or bf16-mixed, since a loss scaler and master weights see one backward a step.
PrecisionSupport closure_optimizer_precisions();
/// The restriction of manual optimization (TrainModule::configure_optimizers): fp32 or
/// bf16-mixed.
PrecisionSupport manual_optimization_precisions();
/// The restriction of ZeRO stage 2 (`distributed.zero: 2`): fp32 or bf16-mixed. (Stage 3 works
/// with every mode: its masters and overflow check are of the parts.)
PrecisionSupport zero2_precisions();

/// Every precision check of a run, before anything is set up: `mode` on the run's `device`
/// (fp16-mixed needs CUDA: Precision::check), then each of `restrictions`.
/// ConfigError naming train.precision, the mode, the component and the modes it works with.
void check_precision(PrecisionMode mode, c10::DeviceType device,
                     const std::vector<PrecisionSupport>& restrictions);

/// The check of one restriction (what check_precision() does for each of them).
void check_precision_support(PrecisionMode mode, const PrecisionSupport& support);

}  // namespace unitrain
