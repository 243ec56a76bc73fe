#pragma once
// What a sweep's job left when it ended, read as the sweep needs it: its exit status, and its
// results/summary.json (the metric it reached, a pause, the steps it trained).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace unitrain {

/// What a job that ended well (exit 0) left in the trial's results/summary.json.
struct JobResult {
  double metric = 0;   ///< the last validation's value of the sweep's metric (NaN: diverged)
  int64_t steps = 0;   ///< optimizer steps trained in all
  int64_t epochs = 0;  ///< completed epochs
  bool stopped_early =
      false;  ///< it ended before its length (early_stopping): status `stopped early`
};

/// The result a job left in the trial's results/summary.json. ConfigError naming the metrics
/// its validation reported when `metric` is not among them; TrainError when there is no summary,
/// or the file is not one.
JobResult read_job_result(const std::string& run_dir, const std::string& metric);

/// What a job that exited with its resume code (checkpoint.on_signal.exit_code) left in
/// results/summary.json when it paused (a `timer` callback's budget spent): why, and its step;
/// none when it did not pause. A job that validated before it paused had to report `metric`:
/// ConfigError as read_job_result's otherwise, so that no sweep pauses round after round on a
/// typo.
std::optional<std::pair<std::string, int64_t>> read_pause(const std::string& run_dir,
                                                          const std::string& metric);

/// The steps a trial's job had trained when it ended (its results/summary.json), 0 if unknown.
int64_t steps_done(const std::string& run_dir);

/// A job's end (its waitpid `status`) by a signal: killed by one, or exited after saving a
/// checkpoint for one (`resume_code`: its checkpoint.on_signal.exit_code), or with 128 + N (a
/// multi-process trial's launcher: a worker killed by signal N, e.g. 137 after kill -9).
bool ended_by_signal(int status, int resume_code);

}  // namespace unitrain
