#pragma once
// RunLogger: fans log events out to the configured trackers of a run.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/log/console_tracker.h"
#include "unitrain/log/tracker.h"

namespace unitrain {

/// Owns the trackers named in `log.trackers`. File trackers write into `run_dir`
/// (metrics.jsonl, metrics.csv); with an empty run_dir only the console is used.
/// `keep_events` >= 0 resumes a run: the files keep the events logged before its checkpoint.
class RunLogger {
 public:
  RunLogger(const LogOptions& options, const std::string& run_dir, int64_t keep_events = -1);
  void log(const LogEvent& event);
  /// Events logged in this run, those kept from before a resume included.
  int64_t events() const { return events_; }
  void progress(int64_t step, int64_t total_steps, int64_t epoch, double running_loss);
  void finish();

 private:
  std::vector<std::unique_ptr<Tracker>> trackers_;
  ConsoleTracker* console_ = nullptr;
  int64_t events_ = 0;
};

}  // namespace unitrain
