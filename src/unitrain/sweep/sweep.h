#pragma once
// run_sweep: a hyperparameter search over ordinary runs (`unitrain sweep`, docs/sweeps.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/sweep/sweep_options.h"
#include "unitrain/sweep/trial_record.h"

namespace unitrain {

/// How a sweep ended.
struct SweepResult {
  /// 0: every trial ran its course; 1: some trial failed (its record says how; continuing the
  /// sweep runs it again); 128+N after signal N (SIGINT, SIGTERM): the running trials saved a
  /// checkpoint and the same sweep continues them.
  int exit_code = 0;
  std::vector<TrialRecord> trials;  ///< in index order
  std::optional<int64_t> best;      ///< the best trial (sweep_results.h: rank_trials)
  int64_t total_steps = 0;          ///< optimizer steps of every trial together
};

/// Runs the sweep `options` describes in options.folder(): each trial an ordinary run folder
/// trial-<k>/ trained by a child process of `executable` (the unitrain program: `unitrain
/// train CONFIG [--plugin P]...`, or `unitrain launch` with launch.nproc_per_node), `parallel`
/// at once; `plugins` are passed to every trial. Every
/// trial's config is resolved before any folder is made: ConfigError naming the key for a bad
/// base config or space. The folder holds sweep.json (the trials' records), so running the same
/// sweep again continues it: finished trials stay, a killed trial resumes from its checkpoint.
/// Writes results.csv, results.json and best.yaml, and logs the results table.
/// ConfigError also when the sweep folder is in use by another sweep, when its sweep.json holds
/// other parameters than this sweep draws, and when the trials' validation does not report
/// `metric` (found after the first trial's first job, naming the metrics it does report).
///
/// Example:
///   SweepResult r = run_sweep(load_sweep_options("sweep.yaml"), "/usr/bin/unitrain");
SweepResult run_sweep(const SweepOptions& options, const std::string& executable,
                      const std::vector<std::string>& plugins = {});

}  // namespace unitrain
