#pragma once
// Internal to optim/: what the built-in schedules share.
#include <functional>
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

/// The duration `args.key` in scheduler steps.
int64_t arg_steps(const Config& args, const std::string& key, const ScheduleContext& context);

/// The duration `args.key` in scheduler steps when given, else the whole run; ConfigError
/// naming the key when that is unknown or zero.
int64_t run_length(const Config& args, const std::string& key, const ScheduleContext& context);

/// Declares the optional `warmup` duration of a schedule.
void add_warmup_field(Schema& schema);
/// Declares the optional `total` duration of a schedule (null = the whole run).
void add_total_field(Schema& schema);

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
