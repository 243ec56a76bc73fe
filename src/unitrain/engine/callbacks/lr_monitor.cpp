#include "unitrain/engine/callbacks/lr_monitor.h"

#include <torch/optim/optimizer.h>

#include <string>

#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {

void LrMonitor::on_before_optimizer_step(Trainer& trainer, bool) {
  lrs_.clear();
  // The Trainer's optimizer: lr-group<i>; a module's own optimizer `name`: lr-<name>-group<i>.
  for (const auto& [name, optimizer] : trainer.optimizers()) {
    const std::string prefix = "train/lr-" + (name.empty() ? "" : name + "-") + "group";
    const auto& groups = optimizer->param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      lrs_.emplace_back(prefix + std::to_string(i), groups[i].options().get_lr());
    }
  }
}

void LrMonitor::on_before_log(Trainer&, MetricMap& metrics) {
  for (const auto& [key, lr] : lrs_) metrics[key] = lr;
}

void register_lr_monitor_callback() {
  register_callback<LrMonitor, LrMonitorOptions>(
      "lr_monitor", "log the learning rate each parameter group's last step used");
}

}  // namespace unitrain
