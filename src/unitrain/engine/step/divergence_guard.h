#pragma once
// DivergenceGuard: the moving mean of the step losses that train.divergence compares each step
// with, and the count of rollbacks with the learning-rate scale they left.
#include <cstdint>
#include <deque>
#include <string>

#include "unitrain/engine/checkpoint_entry.h"
#include "unitrain/engine/config/divergence_options.h"

namespace unitrain {

class DivergenceGuard {
 public:
  explicit DivergenceGuard(const DivergenceOptions& options) : options_(options) {}

  const DivergenceOptions& options() const { return options_; }
  /// train.divergence.spike_factor is set: every step's loss is read and compared.
  bool watches_spikes() const { return options_.spike_factor.has_value(); }
  /// Why `loss` (a step's mean loss over its samples on every rank) is a spike, or "" when it
  /// is not one (or the mean has fewer than `window` steps yet, or the loss is not finite:
  /// on_nonfinite's case).
  std::string spike(double loss) const;
  /// A step that trained (no spike, nothing skipped): its loss joins the moving mean.
  void record(double loss);

  /// A rollback starts: counts it, and the learning rate's scale times lr_factor; TrainError
  /// (the run ends with exit 1) when that makes more than max_rollbacks (`why`: what diverged,
  /// for the message). Until rolled_back(), a restore of the checkpoint file takes its losses
  /// only: the count and the scale go on.
  void begin_rollback(const std::string& why);
  void rolled_back() { rolling_back_ = false; }
  int64_t rollbacks() const { return rollbacks_; }
  /// The product of lr_factor over the rollbacks so far: every learning rate is scaled by it.
  double lr_scale() const { return lr_scale_; }

  /// The checkpoint file (divergence.json): the losses of the moving mean, the rollbacks and the
  /// learning rate's scale. A rollback restores the losses only: the count and the scale go on.
  std::string to_json() const;
  void load_json(const std::string& text, const std::string& where);

 private:
  DivergenceOptions options_;
  std::deque<double> losses_;  ///< the last `window` steps' losses
  double sum_ = 0;
  int64_t rollbacks_ = 0;
  double lr_scale_ = 1.0;
  bool rolling_back_ = false;
};

/// The guard's checkpoint entry: divergence.json in each checkpoint (the losses are the same
/// on every rank: rank 0 writes them, every rank restores them).
CheckpointEntryPtr divergence_entry(DivergenceGuard& guard);

}  // namespace unitrain
