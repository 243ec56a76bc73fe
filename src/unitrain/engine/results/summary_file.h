#pragma once
// What the Trainer writes into results/summary.json besides a fit's end (a failure, test
// metrics), through RunSummary (unitrain/log/run_summary.h), which reads and writes the file;
// and results/test.json.
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

/// Writes run_dir/results/test.json ({split, checkpoint, step, examples, metrics}) and adds the
/// test metrics to summary.json (when it exists). Returns the path of test.json.
std::string write_test_results(const std::string& run_dir, const MetricMap& metrics, int64_t step,
                               int64_t examples, const std::string& checkpoint);

}  // namespace unitrain
