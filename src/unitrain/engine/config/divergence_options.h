#pragma once
// DivergenceOptions: the `train.divergence` section — loss spikes, and what a diverging step
// (a spike, or a non-finite loss with train.on_nonfinite: rollback) does.
#include <cstdint>
#include <optional>

#include "unitrain/core/options.h"

namespace unitrain {

/// What a loss spike does: stop the run (exit 1), skip that update, or roll back to the last
/// checkpoint and go on past the batches that led there.
enum class SpikeAction { Stop, Skip, Rollback };

/// Loss-spike detection and rollbacks (docs/checkpoints.md, "Divergence"). A step's loss is a
/// spike when it is above `spike_factor` times the mean of the last `window` steps' losses
/// (after `window` steps; the step's loss over every rank's samples, the same on every rank).
struct DivergenceOptions {
  std::optional<double> spike_factor;  ///< unset: no spike detection
  int64_t window = 50;                 ///< steps in the moving mean
  SpikeAction action = SpikeAction::Rollback;
  /// Each rollback multiplies the learning rate by this (for the rest of the run).
  double lr_factor = 1.0;
  /// Rollbacks (of spikes and non-finite losses together) before the run stops with exit 1.
  int64_t max_rollbacks = 3;

  static void declare(Options<DivergenceOptions>& o);
};

}  // namespace unitrain
