#pragma once
// The metrics files: run_dir/metrics.jsonl and run_dir/metrics.csv.
#include <cstdint>
#include <string>

#include "unitrain/log/tracker.h"

namespace unitrain {

/// Registers `jsonl` and `csv` (called by register_builtin_trackers()).
void register_file_trackers();

/// Writes one JSON object per event: {"step":..,"epoch":..,"samples":..,"time":..,<metrics>}.
/// `keep_events` < 0 starts a new file; >= 0 resumes a run: the file keeps its first
/// `keep_events` events (those logged before the checkpoint) and grows from there.
TrackerPtr make_jsonl_tracker(const std::string& path, int64_t keep_events = -1);
/// A CSV with columns step, epoch, samples, time and every metric key seen so far; the file is
/// rewritten with a wider header when a new key appears, so every row has every column.
/// `keep_events` as for make_jsonl_tracker.
TrackerPtr make_csv_tracker(const std::string& path, int64_t keep_events = -1);

}  // namespace unitrain
