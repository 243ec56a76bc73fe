#pragma once
// StallWatchdog: a thread that notices when the training thread makes no progress outside the
// collectives (a data loader stuck on a network filesystem, a deadlock in user code) and says
// where it is stuck.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "unitrain/core/run_position.h"
#include "unitrain/engine/config/watchdog_options.h"

namespace unitrain {

class ProcessGroup;

/// What the watchdog says of a rank whose position has not moved for `seconds`, e.g.
/// "rank 1: no progress for 31.2 s at step 37, phase data wait (train.watchdog.stall_timeout 30
/// s)".
std::string describe_stall(int rank, int64_t step, const char* phase, double seconds,
                           double stall_timeout);

/// Watches `position` from its own thread while it lives. When the position has not moved for
/// options.stall_timeout seconds and no collective is in flight (those have
/// distributed.timeout) or failed (the group reports that): with action warn, a warning naming the
/// rank, step and phase, repeated when the stall has lasted another stall_timeout; with action
/// abort, that message as an error, the group's flight record (run_dir/logs/flight-rank-N.json) and
/// the process's end with exit code 1 (a stuck thread cannot be unwound).
///
/// It also answers a stop signal (StopSignalGuard) that comes while the training thread waits
/// for data, whatever stall_timeout and action say: at once, a warning that the run stops at the
/// step's end; if no data comes within `signal_grace` seconds, the process ends (a thread stuck
/// in a read cannot be unwound) with `signal_exit_code` (130 after SIGINT), saying that it
/// resumes from the last checkpoint saved.
class StallWatchdog {
 public:
  StallWatchdog(const WatchdogOptions& options, const RunPosition& position, ProcessGroup* group,
                int rank, int signal_exit_code = 75, double signal_grace = 10);
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

 private:
  void watch();
  /// The stall found (`seconds` long): warn, or end the process.
  void act(double seconds);
  /// A stop signal while the training thread waits for data: said, then the end after the grace.
  void answer_stop_signal(std::chrono::steady_clock::time_point now);

  WatchdogOptions options_;
  const RunPosition& position_;
  ProcessGroup* group_;
  int rank_;
  int signal_exit_code_;
  std::chrono::steady_clock::duration signal_grace_;
  std::chrono::steady_clock::time_point signal_seen_{};  ///< in a data wait; {} when not
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace unitrain
