#pragma once
// results/summary.json: what a run did, in one file (the Hugging Face Trainer's
// all_results.json / trainer_state.json, for unitrain runs).
#include <cstdint>
#include <string>

#include "unitrain/core/train_state.h"
#include "unitrain/engine/metric_map.h"

namespace unitrain {

/// What summary.json says of a fit().
struct RunSummary {
  std::string name;
  std::string status;  ///< run_status_text(): finished, stopped early, paused: why, ...
  TrainState state;
  double seconds = 0;       ///< training time, before a resume included
  MetricMap final_train;    ///< the last training log event
  MetricMap final_val;      ///< the last validation pass
  std::string best_metric;  ///< checkpoint.best.metric ("" = none)
  double best_value = 0;    ///< its best value (NaN: none yet)
  std::string best_checkpoint, last_checkpoint, resumed_from;
  int world_size = 1;
  int64_t rollbacks = 0;  ///< train.divergence's rollbacks (written when there were any)
};

/// Writes run_dir/results/summary.json (atomically). TrainError when it cannot.
void write_run_summary(const std::string& run_dir, const RunSummary& summary);

/// A fit() that failed with `error` while training: summary.json's status becomes `failed:
/// <error>` and its counters the run's (`state`, `world_size`); what an earlier part of the run
/// wrote there (its final metrics, best and last checkpoints) stays. Without one, a summary of
/// those alone. TrainError when it cannot write.
void write_failed_summary(const std::string& run_dir, const std::string& name,
                          const TrainState& state, int world_size, const std::string& error);

/// summary.json's status in `run_dir` when it says the run stopped to be resumed: a save
/// signal's ("stopped by SIGTERM: checkpoint saved; exit 75 ...: run the same command to
/// resume") or a pause's ("paused: why"); "" for any other (finished, stopped early, failed,
/// SIGINT) or no summary.
std::string status_awaiting_resume(const std::string& run_dir);

/// checkpoint.resume as it applies to `run_dir` now: `none` ("do not resume an earlier run")
/// becomes `auto` when the run there stopped to be resumed (status_awaiting_resume): a run's
/// own checkpoints are its own, and the command that stopped it continues it. Anything else as
/// given.
std::string resume_choice(const std::string& resume, const std::string& run_dir);

/// Writes run_dir/results/test.json ({split, checkpoint, step, examples, metrics}) and adds the
/// test metrics to summary.json (when it exists). Returns the path of test.json.
std::string write_test_results(const std::string& run_dir, const MetricMap& metrics, int64_t step,
                               int64_t examples, const std::string& checkpoint);

}  // namespace unitrain
