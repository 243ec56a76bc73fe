#include "unitrain/engine/loop/run_decisions.h"

#include <fmt/format.h>

#include "unitrain/core/save_signals.h"
#include "unitrain/engine/loop/stop_signal.h"
#include "unitrain/log/console.h"

namespace unitrain {

RunDecisions::RunDecisions() : signal_source_(&StopSignalGuard::received) {}

void RunDecisions::start(bool shared, bool reads_save_clock, double auto_min_seconds,
                         double auto_max_seconds) {
  shared_ = shared;
  reads_clock_ = reads_save_clock;
  auto_min_ = auto_min_seconds;
  auto_max_ = auto_max_seconds;
  stop_ = stop_requested_ = agreed_pause_ = save_soon_ = save_now_ = ended_ = false;
  agreed_signal_ = outcome_signal_ = late_signal_ = 0;
  pause_reason_.clear();
  outcome_paused_.clear();
  last_save_ = Clock::now();
}

void RunDecisions::request_stop() {
  if (shared_) {
    stop_requested_ = true;
  } else {
    stop_ = true;
  }
}

void RunDecisions::request_pause(const std::string& reason) {
  if (pause_reason_.empty()) pause_reason_ = reason.empty() ? "a callback asked to pause" : reason;
}

void RunDecisions::read_clock(bool& soon, bool& now) const {
  if (!reads_clock_) return;
  const double since = std::chrono::duration<double>(Clock::now() - last_save_).count();
  soon = since >= auto_min_;
  now = since >= auto_max_;
}

StepDecision RunDecisions::mine() const {
  StepDecision d;
  d.stop = stop_ || stop_requested_;
  d.signal = signal_source_();
  d.pause = !pause_reason_.empty();
  read_clock(d.save_soon, d.save_now);
  return d;
}

void RunDecisions::step_ended(const StepDecision& agreed) {
  if (!shared_) {  // one process: its own clock, now
    save_soon_ = save_now_ = false;
    read_clock(save_soon_, save_now_);
    return;
  }
  save_soon_ = agreed.save_soon;
  save_now_ = agreed.save_now;
  if (agreed.stop) stop_ = true;
  if (agreed_signal_ == 0) agreed_signal_ = agreed.signal;
  if (agreed.pause) agreed_pause_ = true;
}

void RunDecisions::agree_after_validation(const std::function<bool(bool)>& any_rank) {
  if (shared_ && any_rank(stop_requested_)) stop_ = true;
}

void RunDecisions::saved() {
  last_save_ = Clock::now();
  save_soon_ = save_now_ = false;
}

int RunDecisions::signal() const { return shared_ ? agreed_signal_ : signal_source_(); }

bool RunDecisions::pause() const { return shared_ ? agreed_pause_ : !pause_reason_.empty(); }

bool RunDecisions::act_on_signal_or_pause(bool checkpoints_on) {
  const int sig = signal();
  if (sig != 0 && outcome_signal_ == 0 && late_signal_ == 0 && ended_) {  // stops nothing
    late_signal_ = sig;
    log::info(fmt::format("received {} after the last step: training is complete; finishing",
                          signal_name(sig)));
    return false;
  }
  if (sig != 0 && outcome_signal_ == 0 && late_signal_ == 0) {
    outcome_signal_ = sig;
    log::warn(fmt::format("received {}: {} and stopping", signal_name(sig),
                          checkpoints_on ? "saving a checkpoint" : "checkpoints are off,"));
    return true;
  }
  if (pause() && !ended_ && outcome_paused_.empty() && outcome_signal_ == 0) {
    outcome_paused_ = pause_reason_.empty() ? "another rank asked to pause" : pause_reason_;
    log::info(fmt::format(
        "pausing ({}): {}; run the same command again to resume", outcome_paused_,
        checkpoints_on ? "saving a checkpoint" : "checkpoints are off, nothing to resume from"));
    return true;
  }
  return false;
}

}  // namespace unitrain
