#pragma once
// The config-driven path: build data, an ObjectiveModule and a Trainer from one resolved config.
#include "unitrain/core/config.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {

struct ConfigRunResult {
  FitResult fit;
  MetricMap test;  ///< test-split metrics (`test/...`), empty without data.test
};

/// Trains what `config` (resolved by load_run_config) describes, then evaluates data.test when
/// given. ConfigError for bad setup, TrainError for failures during training.
ConfigRunResult train_from_config(const Config& config);

}  // namespace unitrain
