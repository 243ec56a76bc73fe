#pragma once
// profile/summary.json: where a run's step time went, phase by phase (written by the profiler,
// rendered by `unitrain report`; the format is documented in docs/report.md).
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain::report {

/// One row of profile/summary.json's "phases".
struct PhaseTiming {
  std::string name;
  double total_seconds = 0, mean_ms = 0, share = 0;
};

/// profile/summary.json: {"steps": N, "phases": [{"name", "total_seconds", "mean_ms", "share"}]}.
struct ProfileSummary {
  int64_t steps = 0;
  std::vector<PhaseTiming> phases;
};

/// Parses the text of a profile/summary.json. ConfigError naming `source` and what is wrong (not
/// JSON, no "phases" list, a phase without a name or with a non-numeric field).
ProfileSummary parse_profile_summary(const std::string& text, const std::string& source);

}  // namespace unitrain::report
