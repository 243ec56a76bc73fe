#include "unitrain/engine/loop/stall_watchdog.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "unitrain/core/save_signals.h"
#include "unitrain/engine/loop/stop_signal.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

std::string describe_stall(int rank, int64_t step, const char* phase, double seconds,
                           double stall_timeout) {
  return fmt::format(
      "rank {}: no progress for {:.1f} s at step {}, phase {} (train.watchdog.stall_timeout {} s)",
      rank, seconds, step, phase, stall_timeout);
}

StallWatchdog::StallWatchdog(const WatchdogOptions& options, const RunPosition& position,
                             ProcessGroup* group, int rank, int signal_exit_code,
                             double signal_grace)
    : options_(options),
      position_(position),
      group_(group),
      rank_(rank),
      signal_exit_code_(signal_exit_code),
      signal_grace_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(signal_grace))) {
  thread_ = std::thread([this] { watch(); });
}

StallWatchdog::~StallWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatchdog::watch() {
  using namespace std::chrono;
  const auto timeout =
      duration_cast<steady_clock::duration>(duration<double>(options_.stall_timeout));
  // Checks ten times per stall_timeout (at most once a second, at least every 50 ms); without
  // one, every 100 ms for a stop signal.
  const auto every = options_.stall_timeout > 0
                         ? std::clamp(duration_cast<milliseconds>(timeout / 10), milliseconds(50),
                                      milliseconds(1000))
                         : milliseconds(100);
  steady_clock::time_point warned_move{};   // the move of the stall last warned of
  steady_clock::time_point next_warning{};  // then another stall_timeout later
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
    const auto moved = position_.moved();
    const auto now = steady_clock::now();
    answer_stop_signal(now);
    if (options_.stall_timeout <= 0 || now - moved < timeout) continue;
    // A collective in flight is distributed.timeout's to judge; a failed one is being reported.
    if (group_ && (group_->flight().open() > 0 || group_->failed())) continue;
    if (moved == warned_move && now < next_warning) continue;
    lock.unlock();
    act(duration<double>(now - moved).count());
    lock.lock();
    warned_move = moved;
    next_warning = now + timeout;
  }
}

void StallWatchdog::answer_stop_signal(std::chrono::steady_clock::time_point now) {
  const int signal = StopSignalGuard::received();
  if (signal == 0 || std::strcmp(position_.phase(), "data wait") != 0) {
    signal_seen_ = {};
    return;
  }
  const double grace = std::chrono::duration<double>(signal_grace_).count();
  if (signal_seen_ == std::chrono::steady_clock::time_point{}) {
    signal_seen_ = now;
    log::warn(fmt::format(
        "{} while waiting for data for step {}: the run saves a checkpoint and stops at that "
        "step's end; if no data comes within {:g} s, it ends without saving",
        signal_name(signal), position_.step(), grace));
    return;
  }
  if (now - signal_seen_ < signal_grace_) return;
  log::error(fmt::format(
      "{} and no data for step {} within {:g} s (the data loader is stuck: a file that does not "
      "answer?): ending the process without a checkpoint; the run resumes from the last one saved",
      signal_name(signal), position_.step(), grace));
  log::flush();
  std::_Exit(signal == SIGINT ? 130 : signal_exit_code_);
}

void StallWatchdog::act(double seconds) {
  const std::string message =
      describe_stall(rank_, position_.step(), position_.phase(), seconds, options_.stall_timeout);
  if (options_.action == StallAction::Warn) {
    log::warn(message);
    return;
  }
  log::error(message + "; ending the process (train.watchdog.action: abort)");
  if (group_) group_->write_flight(message);
  log::flush();
  std::_Exit(1);
}

}  // namespace unitrain
