#pragma once
// EarlyStopping: ends training when a validation metric has stopped improving.
#include <cmath>
#include <limits>
#include <optional>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

/// Stops the run (Trainer::request_stop: agreed across ranks) when `metric` has not improved
/// by more than `min_delta` for `patience` validation passes. Its best value and count of
/// passes without improvement are saved in checkpoints (early_stopping.json). With `mode: auto`
/// the metric improves the way the run's module declares (TrainModule::metric_direction),
/// resolved when the run starts: ConfigError naming early_stopping.mode when it declares none.
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  std::string name() const override { return "early_stopping"; }
  bool reads_step_values() const override { return false; }
  bool hooks_inside_step() const override { return false; }
  /// Resolves the mode against the module being trained (fit() does it at its start).
  void on_fit_start(Trainer& trainer) override;
  /// Which way the metric improves for `module`: the mode, or for auto what `module` declares.
  /// ConfigError naming early_stopping.mode when auto finds no declared direction.
  void resolve_direction(const TrainModule& module);
  void on_validation_end(Trainer& trainer, const MetricMap& metrics) override;
  void on_save_checkpoint(Trainer& trainer, CheckpointEntries& entries) override;
  void on_load_checkpoint(Trainer& trainer, const CheckpointEntries& entries) override;

  double best() const { return best_; }  ///< NaN until the first validation
  int64_t stalls() const { return stalls_; }

 private:
  /// The resolved direction; resolved now if no fit() did (an explicit mode needs no module).
  MetricDirection direction(const Trainer& trainer);

  EarlyStoppingOptions options_;
  std::optional<MetricDirection> direction_;
  double best_ = std::numeric_limits<double>::quiet_NaN();
  int64_t stalls_ = 0;
};

/// Registers callback `early_stopping` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_early_stopping_callback();

}  // namespace unitrain
