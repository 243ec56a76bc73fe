#pragma once
// LogOptions: the `log` section — which trackers, their settings, the progress bar, all ranks.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/options.h"
#include "unitrain/log/tracker.h"

namespace unitrain {

/// Settings of the `log` section. Tracker names are checked against the tracker registry
/// (ConfigError with a "did you mean" and the registered names); each listed tracker's settings
/// are `log.tracker_args.<name>`, checked against the schema it registered.
struct LogOptions {
  std::vector<std::string> trackers = {"console", "jsonl", "csv"};
  std::string progress_bar = "auto";  ///< auto (when stdout is a terminal) | true | false
  /// Data-parallel runs: every rank writes its own tracker files (rank_dir()), not rank 0 only.
  bool all_ranks = false;
  /// `tracker_args` as given: settings by tracker name, which declare()'s check resolves into
  /// tracker_args.
  Config given_tracker_args;
  /// The resolved settings of each tracker in `trackers` that has settings, by name (defaults
  /// filled in).
  std::map<std::string, Config> tracker_args;

  /// Declares the section's keys (options_of<LogOptions>()).
  static void declare(Options<LogOptions>& o);
  static LogOptions from_config(const Config& log_section) {
    return options_of<LogOptions>().parse(log_section);
  }
  static std::shared_ptr<const Schema> schema() { return options_of<LogOptions>().schema(); }
  /// Checks `log.trackers` and resolves `log.tracker_args` of a resolved `log` section in place:
  /// every listed tracker that has settings gets them with their defaults, so the run's
  /// config.yaml shows them, and records them as read (the run logger hands them to the
  /// trackers). Called when a run config is resolved (a bad name fails before anything runs).
  static void resolve_trackers(Config& log_section);

  /// Where the tracker files of `rank` go: `run_dir` on rank 0; with all_ranks,
  /// `run_dir/logs/rank-<rank>` on the others; "" (no files) otherwise or without a run_dir.
  std::string rank_dir(const std::string& run_dir, int rank) const;
  /// What `rank`'s trackers are told of a run segment that starts after the checkpoint of
  /// `checkpoint_step` (0: a fresh start) which had logged `keep_events` events (-1: a fresh
  /// start): the resolved config's text, the folders, the rank and world size.
  RunInfo segment(std::string config_yaml, const std::string& run_dir, int rank, int world,
                  int64_t checkpoint_step, int64_t keep_events) const;
  /// These options as rank `rank` uses them: metrics files, console metrics and the progress
  /// bar from rank 0 only (with all_ranks, every rank's trackers, in rank_dir(); no bar).
  LogOptions of_rank(int rank) const;
};

}  // namespace unitrain
