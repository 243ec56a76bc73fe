#pragma once
// The results of a sweep: results.csv and results.json (a row per trial), the console table,
// and the ranking they share.
#include <map>
#include <string>
#include <vector>

#include "unitrain/sweep/trial_record.h"

namespace unitrain {

/// The trials best first: the highest rung reached first (asha: a metric after more training
/// ranks above one after less), then the better metric, then the lower index; trials without
/// a metric last.
std::vector<const TrialRecord*> rank_trials(const std::vector<TrialRecord>& trials,
                                            bool higher_is_better);

/// Writes `folder`/results.csv and `folder`/results.json (each replaced whole, through a
/// temporary file): one row per trial in index order (trial, each parameter, rung, metric,
/// steps, status; results.json also the metric at each rung it reached, `rung_metrics`, and
/// the epochs completed, `epochs`), the metric's column named `metric`. A trial that finished
/// no rung yet (paused or failed before its first) has an empty rung (results.json: null).
/// results.json gives each parameter as its JSON type: numbers, booleans, lists; categorical
/// text as strings. results.json also holds `scales`: the
/// axis each numeric parameter is drawn on (`log` for loguniform, `linear` for uniform and int;
/// `scales` of choice and grid keys are left out), `mode` (`max` or `min`) and `best`: the
/// best trial's index (rank_trials' first, when it has a metric), or null.
void write_sweep_results(const std::string& folder, const std::vector<TrialRecord>& trials,
                         const std::string& metric, bool higher_is_better,
                         const std::map<std::string, std::string>& scales = {});

/// The console table: a header and a line per trial, best first (rank_trials); "-" for a rung
/// or metric a trial has not reached.
std::vector<std::string> results_table(const std::vector<TrialRecord>& trials,
                                       const std::string& metric, bool higher_is_better);

}  // namespace unitrain
