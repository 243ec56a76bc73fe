#pragma once
// EarlyStopping: ends training when a validation metric has stopped improving.
#include <cmath>
#include <limits>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

/// Stops the run (Trainer::request_stop: agreed across ranks) when `metric` has not improved
/// by more than `min_delta` for `patience` validation passes. Its best value and count of
/// passes without improvement are saved in checkpoints (early_stopping.json).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  std::string name() const override { return "early_stopping"; }
  void on_validation_end(Trainer& trainer, const MetricMap& metrics) override;
  void on_save_checkpoint(Trainer& trainer, CheckpointEntries& entries) override;
  void on_load_checkpoint(Trainer& trainer, const CheckpointEntries& entries) override;

  double best() const { return best_; }  ///< NaN until the first validation
  int64_t stalls() const { return stalls_; }

 private:
  EarlyStoppingOptions options_;
  double best_ = std::numeric_limits<double>::quiet_NaN();
  int64_t stalls_ = 0;
};

}  // namespace unitrain
