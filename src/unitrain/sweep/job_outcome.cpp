#include "unitrain/sweep/job_outcome.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/engine/results/run_status.h"

namespace unitrain {
namespace {

/// The last validation's metrics in a job's summary.json `j` (`file`); ConfigError naming the
/// metrics it reported when `metric` is not among them.
nlohmann::json reported(const nlohmann::json& j, const std::string& metric,
                        const std::string& file) {
  const nlohmann::json val = j.contains("final") && j.at("final").is_object()
                                 ? j.at("final").value("val", nlohmann::json::object())
                                 : nlohmann::json::object();
  if (!val.contains(metric) || !val.at(metric).is_number()) {
    std::string known;
    for (const auto& [k, v] : val.items()) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError(fmt::format(
        "metric: the trials' validation does not report '{}'; it reports: {} (in {})", metric,
        known.empty() ? std::string("nothing (no validation data?)") : known, file));
  }
  return val;
}

}  // namespace

JobResult read_job_result(const std::string& run_dir, const std::string& metric) {
  const std::string file = run_dir + "/results/summary.json";
  const auto summary = read_summary_status(run_dir);
  UT_CHECK_TRAIN(summary, file, ": missing, or without a status, after the trial ended");
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in);
  JobResult r;
  r.metric = reported(j, metric, file).at(metric).get<double>();
  r.steps = summary->step;
  r.epochs = summary->epoch;
  r.stopped_early = summary->status.status == RunStatus::StoppedEarly;
  return r;
}

std::optional<std::pair<std::string, int64_t>> read_pause(const std::string& run_dir,
                                                          const std::string& metric) {
  const auto summary = read_summary_status(run_dir);
  if (!summary || summary->status.status != RunStatus::Paused) return std::nullopt;
  const std::string file = run_dir + "/results/summary.json";
  std::ifstream in(file);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json last =
      j.is_object() ? j.value("final", nlohmann::json::object()) : nlohmann::json::object();
  if (last.is_object() && last.contains("val") && !last.at("val").empty()) {
    reported(j, metric, file);
  }
  return std::make_pair(summary->status.detail, summary->step);
}

bool ended_by_signal(int status, int resume_code) {
  if (WIFSIGNALED(status)) return true;
  const int code = WEXITSTATUS(status);
  return code == resume_code || (code > 128 && code <= 128 + 64);
}

int64_t steps_done(const std::string& run_dir) {
  const auto summary = read_summary_status(run_dir);
  return summary ? summary->step : 0;
}

}  // namespace unitrain
