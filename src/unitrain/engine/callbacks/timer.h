#pragma once
// Timer: end a run with a checkpoint when a wall-clock budget is spent.
#include <chrono>
#include <string>

#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

struct TimerOptions {
  std::string
      budget;  ///< "3h50m", "90m", "45s", "1h", "02:30:00" (HH:MM:SS), "1:02:30:00" (DD:HH:MM:SS)
  bool pause = true;  ///< true: a checkpoint the next run resumes from; false: a finished run
  static void declare(Options<TimerOptions>& o);
};

/// Parses a budget: units d, h, m, s combined ("1h30m", "90s"), or [[DD:]HH:]MM:SS; ConfigError
/// naming `key` otherwise.
double parse_wall_clock(const std::string& text, const std::string& key);

/// What a timer says when its budget is spent, once: "timer: the time budget of 1 s is spent
/// (after 1.0 s)", longer times in minutes and hours ("3 h 50 min").
std::string budget_spent_text(double budget_seconds, double spent_seconds);

/// Checks after each optimizer step (and epoch) whether this process has trained for `budget`
/// since fit() began; then ends the run after the step with a checkpoint (what a cluster job
/// with a time limit needs): with `pause`, a paused run the same command resumes
/// (FitResult::paused, exit code checkpoint.on_signal.exit_code, 75 by default: "run the same
/// command to resume"); otherwise a finished one (Trainer::request_stop). In
/// data-parallel runs the ranks agree: the first rank over the budget ends it for all.
class Timer : public Callback {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Timer(TimerOptions options);
  std::string name() const override { return "timer"; }
  bool reads_step_values() const override { return false; }
  bool hooks_inside_step() const override { return false; }
  void on_fit_start(Trainer& trainer) override;
  void on_step_end(Trainer& trainer, const MetricMap& metrics) override;
  void on_epoch_end(Trainer& trainer) override;

 private:
  void check(Trainer& trainer);
  TimerOptions options_;
  double budget_seconds_;
  Clock::time_point start_;
  bool fired_ = false;
};

/// Registers callback `timer` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_timer_callback();

}  // namespace unitrain
