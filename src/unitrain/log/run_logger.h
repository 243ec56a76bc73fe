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
class RunLogger {
 public:
  RunLogger(const LogOptions& options, const std::string& run_dir);
  void log(const LogEvent& event);
  void progress(int64_t step, int64_t total_steps, int64_t epoch, double running_loss);
  void finish();

 private:
  std::vector<std::unique_ptr<Tracker>> trackers_;
  ConsoleTracker* console_ = nullptr;
};

}  // namespace unitrain
