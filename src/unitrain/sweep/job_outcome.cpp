#include "unitrain/sweep/job_outcome.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cmath>

#include "unitrain/core/error.h"
#include "unitrain/log/run_summary.h"

namespace unitrain {
namespace {

/// The last validation's value of `metric` in a job's summary `s` (NaN or infinite when the
/// trial diverged); ConfigError naming the metrics it reported when `metric` is not among them.
double reported(const RunSummary& s, const std::string& metric, const std::string& run_dir) {
  const auto it = s.final_val.find(metric);
  if (it == s.final_val.end()) {
    std::string known;
    for (const auto& [k, v] : s.final_val) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError(
        fmt::format("metric: the trials' validation does not report '{}'; it reports: {} (in {})",
                    metric, known.empty() ? std::string("nothing (no validation data?)") : known,
                    RunSummary::path(run_dir)));
  }
  return it->second;
}

}  // namespace

JobResult read_job_result(const std::string& run_dir, const std::string& metric) {
  const auto summary = RunSummary::read(run_dir);
  UT_CHECK_TRAIN(summary, RunSummary::path(run_dir), ": missing after the trial ended");
  JobResult r;
  r.metric = reported(*summary, metric, run_dir);
  r.steps = summary->step;
  r.epochs = summary->epoch;
  r.stopped_early = summary->status == RunStatus::StoppedEarly;
  return r;
}

std::optional<std::pair<std::string, int64_t>> read_pause(const std::string& run_dir,
                                                          const std::string& metric) {
  const auto summary = RunSummary::read_if_valid(run_dir);
  if (!summary || summary->status != RunStatus::Paused) return std::nullopt;
  if (!summary->final_val.empty()) reported(*summary, metric, run_dir);
  return std::make_pair(summary->status_detail, summary->step);
}

bool ended_by_signal(int status, int resume_code) {
  if (WIFSIGNALED(status)) return true;
  const int code = WEXITSTATUS(status);
  return code == resume_code || (code > 128 && code <= 128 + 64);
}

int64_t steps_done(const std::string& run_dir) {
  const auto summary = RunSummary::read_if_valid(run_dir);
  return summary ? summary->step : 0;
}

}  // namespace unitrain
