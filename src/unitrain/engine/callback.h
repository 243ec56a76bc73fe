#pragma once
// Callback: observe and steer a run from outside the loop (Lightning/Marian observers).
#include <map>
#include <string>

#include "unitrain/engine/train_state.h"

namespace unitrain {

class Trainer;

/// Metric values of one log event, e.g. {"train/loss": 0.3, "train/lr": 1e-3}.
using MetricMap = std::map<std::string, double>;

/// Hooks called by the Trainer, in registration order. Default implementations do nothing.
/// A callback may set `state.should_stop` (through Trainer::request_stop) to end training.
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_start(Trainer& trainer) {}
  virtual void on_train_end(Trainer& trainer) {}
  virtual void on_epoch_start(Trainer& trainer) {}
  virtual void on_epoch_end(Trainer& trainer) {}
  /// After each optimizer step; `metrics` holds this step's loss and metrics.
  virtual void on_step_end(Trainer& trainer, const MetricMap& metrics) {}
  /// After each validation pass with its reduced metrics (`val/loss`, `val/acc`, ...).
  virtual void on_validation_end(Trainer& trainer, const MetricMap& metrics) {}
  /// After each log event of training metrics.
  virtual void on_log(Trainer& trainer, const MetricMap& metrics) {}
  /// While a checkpoint is written: add named entries of this callback's own state (any
  /// bytes; a name is a file name in the checkpoint folder, without '/').
  virtual void on_save_checkpoint(Trainer& trainer, std::map<std::string, std::string>& entries) {}
  /// When a run resumes: the entries saved by on_save_checkpoint (all callbacks' entries).
  virtual void on_load_checkpoint(Trainer& trainer,
                                  const std::map<std::string, std::string>& entries) {}
};

}  // namespace unitrain
