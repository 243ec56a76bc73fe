#pragma once
// RunLogger: fans log events out to the configured trackers of a run.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/log/console_tracker.h"  // format_metric, for the RunLogger's users
#include "unitrain/log/log_options.h"
#include "unitrain/log/tracker.h"

namespace unitrain {

/// Builds the trackers named in `log.trackers` from the tracker registry (ConfigError for an
/// unknown name or bad settings, before anything is written) and starts them with `run`; then
/// passes every event, progress update and the end of the run to each, in the listed order.
/// File trackers write into RunInfo::dir; with an empty dir only the console is used.
class RunLogger {
 public:
  RunLogger(const LogOptions& options, const RunInfo& run);
  /// A logger for `run_dir` (RunInfo::dir and run_dir) without the config or a first step.
  /// `keep_events` >= 0 resumes a run: the files keep the events logged before its checkpoint.
  RunLogger(const LogOptions& options, const std::string& run_dir, int64_t keep_events = -1);
  void log(const LogEvent& event);
  /// Events logged in this run, those kept from before a resume included.
  int64_t events() const { return events_; }
  void progress(int64_t step, int64_t total_steps, int64_t epoch, const LossReader& loss);
  /// Ends the trackers' segment (once; later calls do nothing): `completed` false when the run
  /// stopped before its end (a signal) and will be resumed. The trackers get the last value
  /// of every metric logged through this logger.
  void finish(bool completed = true);
  /// A rollback to a checkpoint that had logged `keep_events` events and whose next step is
  /// `first_step`: every tracker drops what was logged after it (Tracker::rewind), as when a run
  /// resumes from that checkpoint.
  void rewind(int64_t keep_events, int64_t first_step);

 private:
  std::vector<TrackerPtr> trackers_;
  RunInfo run_;
  std::map<std::string, double> last_;
  int64_t events_ = 0;
  bool finished_ = false;
};

}  // namespace unitrain
