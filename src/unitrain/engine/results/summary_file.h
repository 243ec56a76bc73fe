#pragma once
// What the Trainer writes into results/summary.json besides a fit's end (a failure, test
// metrics) and reads of it (whether a run stopped to be resumed), through RunSummary
// (unitrain/log/run_summary.h), which reads and writes the file; and results/test.json.
#include <cstdint>
#include <string>

#include "unitrain/core/train_state.h"
#include "unitrain/engine/metric_map.h"

namespace unitrain {

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
