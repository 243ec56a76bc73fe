#include "unitrain/engine/callbacks/lr_monitor.h"

#include <torch/optim/optimizer.h>

#include <string>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {

void LrMonitor::on_before_optimizer_step(Trainer& trainer, bool) {
  lrs_.clear();
  for (const auto& group : trainer.optimizer()->param_groups()) {
    lrs_.push_back(group.options().get_lr());
  }
}

void LrMonitor::on_before_log(Trainer&, MetricMap& metrics) {
  for (size_t i = 0; i < lrs_.size(); ++i) {
    metrics["train/lr-group" + std::to_string(i)] = lrs_[i];
  }
}

void register_lr_monitor_callback() {
  register_callback<LrMonitor, LrMonitorOptions>(
      "lr_monitor", "log the learning rate each parameter group's last step used");
}

}  // namespace unitrain
