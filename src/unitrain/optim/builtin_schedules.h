#pragma once
// Internal to optim/: what the built-in schedules share.
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "unitrain/optim/scheduler.h"

namespace unitrain::schedules {

/// A schedule that is a pure function of the number of scheduler steps (PyTorch's LambdaLR).
class LambdaSchedule : public Scheduler {
 public:
  explicit LambdaSchedule(std::function<double(int64_t)> f) : f_(std::move(f)) {}
  double factor(int64_t steps) const override { return f_(steps < 0 ? 0 : steps); }

 private:
  std::function<double(int64_t)> f_;
};

/// `length` in scheduler steps when given, else the whole run; ConfigError naming `key` (its
/// key path) when that is unknown or zero.
int64_t run_length(const std::optional<TrainUnit>& length, const std::string& key,
                   const ScheduleContext& context);

/// The args of the schedules with a linear warmup.
struct WarmupArgs {
  TrainUnit warmup = TrainUnit::steps(0);
};
/// The args of the schedules with a warmup and a length.
struct WarmupTotalArgs : WarmupArgs {
  std::optional<TrainUnit> total;  ///< null: the whole run
};

/// Declares the `warmup` of a schedule's args T (a WarmupArgs).
template <typename T>
void declare_warmup(Options<T>& args) {
  args.field("warmup", &T::warmup)
      .help("linear warmup from 0 to the base lr, e.g. '100 steps' or '1 epoch'");
}
/// Declares `warmup` and `total` of a schedule's args T (a WarmupTotalArgs).
template <typename T>
void declare_warmup_total(Options<T>& args) {
  declare_warmup(args);
  args.field("total", &T::total).help("length of the schedule (null = the whole run)");
}

constexpr double kPi = 3.14159265358979323846;  ///< for the cosine schedules

/// Linear warmup from 0: steps / max(1, warmup) (transformers' warmup ramp).
inline double warmup_factor(int64_t steps, int64_t warmup) {
  return static_cast<double>(steps) / static_cast<double>(warmup > 1 ? warmup : 1);
}

void register_warmup_schedules();  ///< constant, linear, cosine, cosine_restarts, polynomial,
                                   ///< inverse_sqrt
void register_torch_schedules();   ///< step, multistep, exponential, one_cycle, cosine_annealing
void register_reduce_on_plateau();

}  // namespace unitrain::schedules
