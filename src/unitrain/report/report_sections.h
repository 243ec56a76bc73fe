#pragma once
// The tables of the HTML report, one function per section. Each returns escaped HTML.
#include <string>
#include <vector>

#include "unitrain/report/run_data.h"

namespace unitrain::report {

/// One row per run: status, duration, counters, mean throughput, world size, threads, BLAS,
/// peak memory (its last start's). A click on a run's name shows or hides its lines in every
/// chart. Then, per run whose starts (train.log) were not alike, a row per start: the step it
/// began at, the settings that differ between starts (world size, batch size, accumulation,
/// precision, threads, reader threads, BLAS) and the config keys it changed.
std::string runs_section(const std::vector<RunData>& runs);

/// The latest value of each metric (val first, then test, then train), a column per run, and
/// the best checkpoint's metric.
std::string results_section(const std::vector<RunData>& runs);

/// Each run's checkpoints: step, epoch, samples, state (which of the last and best links point
/// at it; incomplete without its manifest), saved metrics.
std::string checkpoints_section(const std::vector<RunData>& runs);

/// Each profiled run's phases (profile/summary.json); "" when no run has a profile.
std::string profile_section(const std::vector<RunData>& runs);

/// The resolved config: for one run every key; for several, the keys that differ, then the
/// others folded.
std::string config_section(const std::vector<RunData>& runs);

/// The `generate` callback's completions, per run, prompt by prompt and step by step; "" when
/// no run has any.
std::string samples_section(const std::vector<RunData>& runs);

/// What could not be read, per run; "" when nothing.
std::string notes_section(const std::vector<RunData>& runs);

}  // namespace unitrain::report
