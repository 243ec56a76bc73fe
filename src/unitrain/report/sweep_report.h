#pragma once
// A sweep folder in the report (`unitrain report sweeps/<name>`): its trial runs and a
// parameter-vs-metric chart per parameter.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/report/run_data.h"

namespace unitrain::report {

/// One row of a sweep's results.json, with its trial folder.
struct SweepTrial {
  int64_t index = 0;
  std::vector<std::pair<std::string, std::string>> parameters;  ///< key path -> YAML text
  std::optional<double> metric;
  std::string dir;  ///< the trial's run folder; "" when it has not started
};

struct SweepData {
  std::string dir, metric;
  std::vector<SweepTrial> trials;  ///< by index
  std::map<std::string, std::string> scales;  ///< parameter -> `log` or `linear` (results.json)
};

/// True when `dir` is a sweep folder (it holds sweep.json).
bool is_sweep_folder(const std::string& dir);
/// Reads `dir`/results.json and finds each trial's folder (trial-<k>). ConfigError naming the
/// file when it is missing or not a sweep's results.
SweepData read_sweep(const std::string& dir);
/// The page's "Sweep" section: the trials' table and, per parameter whose values are numbers,
/// a scatter chart of the metric against it (its axis as results.json's `scales` says: log for
/// a loguniform key; without one, a log axis when the values are positive and span more than a
/// decade). A trial's marker has its run's colour: the trials with a folder are the
/// page's runs, in index order (run_colour(i) for the i-th).
std::string sweep_section(const SweepData& sweep);

}  // namespace unitrain::report
