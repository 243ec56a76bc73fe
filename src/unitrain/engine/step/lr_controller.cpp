#include "unitrain/engine/step/lr_controller.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "unitrain/optim/optimizer.h"

namespace unitrain {

LrController::LrController(torch::optim::Optimizer& optimizer, SchedulerPtr scheduler,
                           bool per_epoch)
    : optimizer_(optimizer), scheduler_(std::move(scheduler)), per_epoch_(per_epoch) {
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g)
    base_.push_back(get_lr(optimizer_, g));
}

void LrController::follow(const TrainState& state) {
  if (!scheduler_ && scale_ == 1.0) return;  // a constant lr is left as it is
  const double f = scheduler_ ? scheduler_->factor(per_epoch_ ? state.epoch : state.step) : 1.0;
  for (size_t g = 0; g < base_.size(); ++g) set_lr(optimizer_, g, base_[g] * f * scale_);
}

double LrController::lr(size_t group) const { return get_lr(optimizer_, group); }

std::string LrController::resume_note(const std::vector<ConfigChange>& changes,
                                      const std::map<std::string, double>& last_train,
                                      int64_t next_step) const {
  std::vector<std::string> keys;
  for (const ConfigChange& c : changes) {
    if (c.key == "train.max_length" || c.key.rfind("scheduler", 0) == 0 ||
        c.key == "optimizer.lr") {
      keys.push_back(c.key);
    }
  }
  if (keys.empty() || !scheduler_) return "";
  const auto was = last_train.find("train/lr");
  // A schedule that does not depend on the run's length (constant, the default) trains on
  // with the lr it had: nothing to say.
  if (was != last_train.end() && std::abs(lr() - was->second) <= 1e-9 * std::abs(was->second)) {
    return "";
  }
  return fmt::format(
      "lr schedule: {} changed since the checkpoint, and the schedule is a function of the run's "
      "length and settings, so it is recomputed: step {} trains with lr {:.4g}{}. To continue "
      "a decayed schedule unchanged, keep these settings (or start a new run with its own "
      "schedule from these weights: model.init_from)",
      fmt::join(keys, ", "), next_step, lr(),
      was == last_train.end()
          ? ""
          : fmt::format(" (the checkpoint last logged lr {:.4g})", was->second));
}

}  // namespace unitrain
