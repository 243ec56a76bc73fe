#pragma once
// Trackers: where log events go (console, metrics.jsonl, metrics.csv).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/schema.h"

namespace unitrain {

/// One log event: a set of metrics at a point of the run. Metric keys carry their split
/// (`train/loss`, `val/acc`).
struct LogEvent {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t samples = 0;
  double time = 0;  ///< seconds since the run started
  std::map<std::string, double> metrics;
};

/// A destination for log events.
class Tracker {
 public:
  virtual ~Tracker() = default;
  virtual void log(const LogEvent& event) = 0;
  virtual void flush() {}
};

/// Writes one JSON object per event: {"step":..,"epoch":..,"samples":..,"time":..,<metrics>}.
/// `keep_events` < 0 starts a new file; >= 0 resumes a run: the file keeps its first
/// `keep_events` events (those logged before the checkpoint) and grows from there.
std::unique_ptr<Tracker> make_jsonl_tracker(const std::string& path, int64_t keep_events = -1);
/// A CSV with columns step, epoch, samples, time and every metric key seen so far; the file is
/// rewritten with a wider header when a new key appears, so every row has every column.
/// `keep_events` as for make_jsonl_tracker.
std::unique_ptr<Tracker> make_csv_tracker(const std::string& path, int64_t keep_events = -1);

/// Settings of the `log` section.
struct LogOptions {
  std::vector<std::string> trackers = {"console", "jsonl", "csv"};
  std::string progress_bar = "auto";  ///< auto (when stdout is a terminal) | true | false
  static LogOptions from_config(const Config& log_section);
  static std::shared_ptr<const Schema> schema();
};

}  // namespace unitrain
