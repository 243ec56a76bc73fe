#pragma once
// LossScalerOptions: the `train.loss_scaler` section.
#include <cstdint>

#include "unitrain/core/options.h"

namespace unitrain {

/// The scaler's settings (`train.loss_scaler`), PyTorch's GradScaler defaults.
struct LossScalerOptions {
  double init_scale = 65536.0;  ///< 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;

  static void declare(Options<LossScalerOptions>& o);
};

}  // namespace unitrain
