#pragma once
// Trackers: where a run's log events go (console, metrics.jsonl, metrics.csv, TensorBoard, or a
// plugin's), built by name from the tracker registry.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "unitrain/core/registry.h"

namespace unitrain {

struct LogOptions;

/// Registers this area's built-in trackers: console, jsonl, csv, tensorboard (idempotent;
/// engine's register_builtins() calls every area's).
void register_builtin_trackers();

/// One log event: a set of metrics at a point of the run. Metric keys carry their split
/// (`train/loss`, `val/acc`).
struct LogEvent {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t samples = 0;
  double time = 0;  ///< seconds since the run started
  std::map<std::string, double> metrics;
};

/// What a tracker is told of the run segment it logs (a run resumed from a checkpoint is a new
/// segment of the same run).
struct RunInfo {
  std::string config_yaml;  ///< the resolved config (config.yaml's text); "" when not known
  std::string run_dir;      ///< the run folder ("" = none)
  /// Where this process's tracker files go: run_dir on rank 0, run_dir/logs/rank-<N> on the
  /// other ranks with `log.all_ranks`; "" = write no files (console only).
  std::string dir;
  int rank = 0;
  int world_size = 1;
  /// The first optimizer step this segment trains (the checkpoint's step + 1 when resuming);
  /// < 0 when not known.
  int64_t first_step = -1;
  /// < 0: a new run (files start empty). >= 0: resuming; files keep the first `keep_events`
  /// events they hold (those logged before the checkpoint) and grow from there.
  int64_t keep_events = -1;
  bool resuming() const { return keep_events >= 0; }
};

/// Reads a step's loss on demand (Tracker::progress).
using LossReader = std::function<double()>;

/// How a run segment ended, told to Tracker::finish.
struct RunEnd {
  /// The last value of every metric logged in this segment.
  std::map<std::string, double> final_metrics;
  /// False when the segment stopped before the run's end (a signal): it will be resumed.
  bool completed = true;
};

/// A destination for log events. The RunLogger calls start() once, then log() and progress()
/// any number of times, then finish() once (not when training throws: a tracker must leave
/// complete files after every log()). A tracker writing files writes them under RunInfo::dir
/// and writes nothing when it is "". Errors writing are TrainError; bad settings ConfigError
/// (thrown by the factory, before training).
///
/// A plugin adds one by registering a factory (see docs/api.md):
///   tracker_registry().add("mine", "one line for unitrain list", schema_of_its_args,
///       [](const Config& args, const LogOptions&) { return std::make_unique<Mine>(args); });
class Tracker {
 public:
  virtual ~Tracker() = default;
  virtual void start(const RunInfo& run) {}
  virtual void log(const LogEvent& event) = 0;
  /// After each optimizer step (for progress displays). `total_steps` <= 0 when unknown.
  /// `loss()` reads the step's loss, which on a GPU waits for the device: call it only when
  /// something is displayed.
  virtual void progress(int64_t step, int64_t total_steps, int64_t epoch, const LossReader& loss) {}
  virtual void finish(const RunEnd& end) {}
  virtual void flush() {}
  /// The run went back to a checkpoint (a rollback: train.divergence, train.on_nonfinite) and
  /// goes on from there as a resumed segment would: `segment.keep_events` events logged before
  /// that checkpoint stay, those after it are abandoned, and the segment's first step is
  /// `segment.first_step`. A tracker writing files makes them read as one run (no step twice).
  /// The default starts the segment again: start(segment).
  virtual void rewind(const RunInfo& segment) { start(segment); }
};

using TrackerPtr = std::unique_ptr<Tracker>;

/// Registered trackers (names in `log.trackers`). The factory gets the tracker's resolved
/// arguments (`log.tracker_args.<name>`, checked by the schema it registered) and the `log`
/// section's options.
Registry<TrackerPtr, const LogOptions&>& tracker_registry();

}  // namespace unitrain
