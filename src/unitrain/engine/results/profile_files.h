#pragma once
// A profiled run's results: its table to the log, its files to run_dir/profile.
#include <cstdint>

namespace unitrain {

struct ProfileResult;
struct RunSettings;

/// profile.enabled's results after the run's `steps` steps: the table to the log (a warning
/// when the schedule recorded no step), summary.json (summary-rank-R.json on rank R > 0) and
/// the trace (trace-rank-R.json) to run_dir/profile, unless train.test_mode (no run folder).
void write_profile(const ProfileResult& profile, const RunSettings& settings, int rank,
                   int64_t steps);

}  // namespace unitrain
