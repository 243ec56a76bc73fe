#pragma once
// LrMonitor: the learning rate each parameter group's last optimizer step used.
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

struct LrMonitorOptions {
  static void declare(Options<LrMonitorOptions>&) {}  // no arguments
};

/// Adds `train/lr-group<i>` to each training log event: the lr parameter group i's last
/// optimizer step used (Lightning's LearningRateMonitor). `train/lr`, which every log event
/// has, is the lr after that step's schedule update: the one the next step will use (the
/// Hugging Face Trainer's convention).
class LrMonitor : public Callback {
 public:
  explicit LrMonitor(LrMonitorOptions = {}) {}
  std::string name() const override { return "lr_monitor"; }
  bool reads_step_values() const override { return false; }
  bool hooks_inside_step() const override { return false; }
  void on_before_optimizer_step(Trainer& trainer, bool skipped) override;
  void on_before_log(Trainer& trainer, MetricMap& metrics) override;

 private:
  std::vector<std::pair<std::string, double>> lrs_;  ///< metric key and lr, at the last step
};

/// Registers callback `lr_monitor` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_lr_monitor_callback();

}  // namespace unitrain
