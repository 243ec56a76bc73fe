#include "unitrain/sweep/job_outcome.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"

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

std::pair<double, int64_t> read_job_result(const std::string& run_dir, const std::string& metric) {
  const std::string file = run_dir + "/results/summary.json";
  std::ifstream in(file);
  UT_CHECK_TRAIN(in, file, ": missing after the trial ended");
  const nlohmann::json j = nlohmann::json::parse(in);
  return {reported(j, metric, file).at(metric).get<double>(), j.at("step").get<int64_t>()};
}

std::optional<std::pair<std::string, int64_t>> read_pause(const std::string& run_dir,
                                                          const std::string& metric) {
  const std::string file = run_dir + "/results/summary.json";
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const std::string prefix = "paused: ";
  if (!j.is_object() || !j.value("status", nlohmann::json()).is_string()) return std::nullopt;
  const std::string status = j.at("status").get<std::string>();
  if (status.rfind(prefix, 0) != 0) return std::nullopt;
  const nlohmann::json last = j.value("final", nlohmann::json::object());
  if (last.is_object() && last.contains("val") && !last.at("val").empty()) {
    reported(j, metric, file);
  }
  return std::make_pair(status.substr(prefix.size()), j.value("step", int64_t(0)));
}

bool ended_by_signal(int status, int resume_code) {
  if (WIFSIGNALED(status)) return true;
  const int code = WEXITSTATUS(status);
  return code == resume_code || (code > 128 && code <= 128 + 64);
}

int64_t steps_done(const std::string& run_dir) {
  std::ifstream in(run_dir + "/results/summary.json");
  if (!in) return 0;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("step", nlohmann::json()).is_number_integer()
             ? j.at("step").get<int64_t>()
             : 0;
}

}  // namespace unitrain
