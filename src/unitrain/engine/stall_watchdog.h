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
#include "unitrain/engine/watchdog_options.h"

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
/// the process's end with exit code 1 (a stuck thread cannot be unwound). stall_timeout 0: no
/// thread.
class StallWatchdog {
 public:
  StallWatchdog(const WatchdogOptions& options, const RunPosition& position, ProcessGroup* group,
                int rank);
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

 private:
  void watch();
  /// The stall found (`seconds` long): warn, or end the process.
  void act(double seconds);

  WatchdogOptions options_;
  const RunPosition& position_;
  ProcessGroup* group_;
  int rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace unitrain
