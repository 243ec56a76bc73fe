#pragma once
// Learning-rate schedules, matching torch.optim.lr_scheduler and transformers'
// get_*_schedule_with_warmup.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "unitrain/core/registry.h"

namespace unitrain {

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_schedulers();

/// What a schedule needs to know of the run to turn its durations into scheduler steps.
struct ScheduleContext {
  int64_t total_steps = 0;       ///< scheduler steps in the whole run (optimizer steps or epochs)
  int64_t steps_per_epoch = 1;   ///< optimizer steps per epoch
  int64_t samples_per_step = 1;  ///< samples per optimizer step (global batch)
  bool per_epoch = false;        ///< the schedule steps once per epoch (`interval: epoch`)
  /// The optimizer's base lr (`optimizer.lr`); needed by schedules given absolute lrs
  /// (polynomial's lr_end, reduce_on_plateau's min_lr). 0 = unknown.
  double base_lr = 0.0;
  /// Converts a duration from the config into scheduler steps (rounding down, at least 0):
  /// with per_epoch false, steps count as they are, epochs as `steps_per_epoch` steps and
  /// samples as 1/`samples_per_step` step; with per_epoch true everything becomes epochs.
  int64_t to_sched_steps(const TrainUnit& d) const;
};

/// A learning-rate schedule as a multiplier of each parameter group's base lr, a function of
/// the number of scheduler steps taken (0 before the first step), like PyTorch's LambdaLR.
/// reduce_on_plateau also observes the monitored metric.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  /// The lr multiplier after `steps` scheduler steps.
  virtual double factor(int64_t steps) const = 0;
  /// Metric-driven schedules (reduce_on_plateau) return true and get observe() after each
  /// validation pass.
  virtual bool needs_metric() const { return false; }
  virtual void observe(double metric_value) {}
  /// The metric key observed, e.g. "val/loss" (metric-driven schedules only).
  virtual std::string monitored_metric() const { return ""; }
  /// What a checkpoint must save to resume exactly (reduce_on_plateau's best value, counters
  /// and current factor); empty for schedules that are pure functions of the step count.
  virtual std::map<std::string, double> state() const { return {}; }
  /// Restores state(); ConfigError when a key it needs is missing.
  virtual void load_state(const std::map<std::string, double>& state) {}
};

using SchedulerPtr = std::unique_ptr<Scheduler>;

/// Registered schedules (`scheduler.type`).
Registry<SchedulerPtr, const ScheduleContext&>& scheduler_registry();

/// The keys of the `scheduler` section besides `type` and `args` (interval). The whole section
/// is declared in a parent schema as
///   `root.add("scheduler", Type::Section).component("scheduler", "constant")
///        .section(scheduler_section_schema())`.
std::shared_ptr<const Schema> scheduler_section_schema();

/// Whether a resolved `scheduler` section's schedule advances once per epoch (`interval: epoch`)
/// rather than once per optimizer step.
bool schedules_per_epoch(const Config& scheduler_section);

/// Builds the schedule of the `scheduler` section (resolved against the schema first, so a raw
/// section works too). `context.per_epoch` is taken from the section's `interval`.
SchedulerPtr build_scheduler(const Config& scheduler_section, ScheduleContext context);

}  // namespace unitrain
