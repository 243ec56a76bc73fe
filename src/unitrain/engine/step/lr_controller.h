#pragma once
// LrController: sets each parameter group's lr from its base lr and the schedule.
#include <torch/optim/optimizer.h>

#include <map>
#include <string>
#include <vector>

#include "unitrain/core/train_state.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/optim/scheduler.h"

namespace unitrain {

/// Holds the base lr of every group (as the optimizer was built) and sets
/// `base * schedule.factor(steps)` as the run moves, so the lr never drifts by
/// repeated multiplication. Without a schedule the lr stays at its base.
class LrController {
 public:
  LrController(torch::optim::Optimizer& optimizer, SchedulerPtr scheduler, bool per_epoch);
  /// Sets the lr for where the run stands: its steps taken, or its completed epochs when the
  /// schedule steps per epoch. Called whenever either changes (and after a metric is observed).
  void follow(const TrainState& state);
  /// Every lr is the schedule's times `scale` from the next follow() on (train.divergence's
  /// lr_factor after rollbacks); 1 = the schedule's own.
  void set_scale(double scale) { scale_ = scale; }
  bool per_epoch() const { return per_epoch_; }
  Scheduler* scheduler() const { return scheduler_.get(); }
  double lr(size_t group = 0) const;
  /// A resume whose config changed the schedule's inputs (train.max_length, scheduler.*,
  /// optimizer.lr in `changes`): the schedule is a function of them, recomputed, so the lr may
  /// jump; the log line that says so (with `last_train`'s train/lr, the checkpoint's last), or
  /// "" when nothing changed them or there is no schedule.
  std::string resume_note(const std::vector<ConfigChange>& changes,
                          const std::map<std::string, double>& last_train, int64_t next_step) const;

 private:
  torch::optim::Optimizer& optimizer_;
  SchedulerPtr scheduler_;
  bool per_epoch_;
  std::vector<double> base_;
  double scale_ = 1.0;
};

}  // namespace unitrain
