#include "unitrain/engine/lr_controller.h"

#include "unitrain/optim/optimizer.h"

namespace unitrain {

LrController::LrController(torch::optim::Optimizer& optimizer, SchedulerPtr scheduler,
                           bool per_epoch)
    : optimizer_(optimizer), scheduler_(std::move(scheduler)), per_epoch_(per_epoch) {
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g) base_.push_back(get_lr(optimizer_, g));
}

void LrController::follow(const TrainState& state) {
  if (!scheduler_) return;
  const double f = scheduler_->factor(per_epoch_ ? state.epoch : state.step);
  for (size_t g = 0; g < base_.size(); ++g) set_lr(optimizer_, g, base_[g] * f);
}

double LrController::lr(size_t group) const { return get_lr(optimizer_, group); }

}  // namespace unitrain
