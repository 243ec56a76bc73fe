#pragma once
// TrialRecord: what a sweep knows of one trial — its parameters, the metric at each rung it
// reached, its status — and the sweep.json that holds every trial's record.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/sweep/search_space.h"

namespace unitrain {

enum class TrialStatus {
  Running,       ///< a job trains it (or did when the sweep was killed): it resumes
  Stopped,       ///< it finished a rung and waits for a promotion (asha), or was not promoted
  Finished,      ///< it finished the last rung
  StoppedEarly,  ///< its job ended before its rung's length (early_stopping): never promoted
  Failed,        ///< its last job failed; a continued sweep runs that job again
  Paused,        ///< its job paused with a checkpoint (a `timer`): a continued sweep resumes it
};
const char* status_name(TrialStatus s);

struct TrialRecord {
  int64_t index = 0;
  TrialParameters parameters;
  std::vector<double> rung_metrics;  ///< the metric at each rung it finished, in order
  int target_rung = 0;               ///< the rung its current or last job trains to
  int64_t steps = 0;                 ///< optimizer steps trained so far
  int64_t epochs = 0;                ///< epochs completed when its last job ended well
  TrialStatus status = TrialStatus::Running;
  int64_t restarts = 0;  ///< restarts after a signal the sweep did not send
  std::string error;     ///< how its last job failed

  /// The highest rung finished, -1 for none.
  int rung() const { return static_cast<int>(rung_metrics.size()) - 1; }
  /// The metric at rung(); none before the first rung.
  std::optional<double> metric() const;
};

/// sweep.json: every trial's record, in index order. write() replaces the file atomically
/// (a temporary file renamed over it), so a sweep killed at any point leaves a whole one.
std::vector<TrialRecord> read_trial_records(const std::string& file);
void write_trial_records(const std::string& file, const std::vector<TrialRecord>& trials);

}  // namespace unitrain
