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
  std::optional<double> metric;                                 ///< at the last rung it reached
  /// The metric at each rung it reached (results.json's rung_metrics; older results: none).
  std::vector<double> rung_metrics;
  int rung = -1;  ///< the last rung it finished (-1: none yet)
  int64_t steps = 0;
  std::string status;
  std::string dir;  ///< the trial's run folder; "" when it has not started
};

struct SweepData {
  std::string dir, metric;
  std::vector<SweepTrial> trials;             ///< by index
  std::map<std::string, std::string> scales;  ///< parameter -> `log` or `linear` (results.json)
  std::optional<int64_t> best;  ///< the best trial (results.json's; older results: none)
};

/// True when `dir` is a sweep folder (it holds sweep.json).
bool is_sweep_folder(const std::string& dir);
/// Reads `dir`/results.json and finds each trial's folder (trial-<k>). ConfigError naming the
/// file when it is missing or not a sweep's results.
SweepData read_sweep(const std::string& dir);
/// The page's "Sweep" section: the trials' table (each parameter, rung, metric, steps, status;
/// the best trial's row marked) and, per parameter whose values are numbers, a scatter chart
/// of the metric at the first rung — the one every trial that ran reached, so the points
/// compare like with like — against it (its axis as results.json's `scales` says: log for a
/// loguniform key; without one, a log axis when the values are positive and span more than a
/// decade). A trial's marker has its run's colour: the trials with a folder are the
/// page's runs, in index order (run_colour(i) for the i-th).
std::string sweep_section(const SweepData& sweep);

}  // namespace unitrain::report
