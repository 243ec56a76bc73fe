#include "unitrain/engine/results/run_status.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace unitrain {
namespace {

constexpr const char* kFinished = "finished";
constexpr const char* kStoppedEarly = "stopped early";
constexpr const char* kPaused = "paused: ";
constexpr const char* kFailed = "failed: ";
constexpr const char* kStoppedBy = "stopped by ";
constexpr const char* kResumeHint = "run the same command to resume";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

int64_t count_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number_integer() ? j.at(key).get<int64_t>() : 0;
}

}  // namespace

std::string run_status_text(RunStatus status, const std::string& detail) {
  switch (status) {
    case RunStatus::Finished:
      return kFinished;
    case RunStatus::StoppedEarly:
      return kStoppedEarly;
    case RunStatus::Paused:
      return kPaused + detail;
    case RunStatus::Failed:
      return kFailed + detail;
    case RunStatus::StoppedBySignal:
    case RunStatus::Unknown:
      break;
  }
  return detail;
}

StatusText parse_run_status(const std::string& text) {
  StatusText s;
  s.text = text;
  if (text == kFinished) {
    s.status = RunStatus::Finished;
  } else if (text == kStoppedEarly) {
    s.status = RunStatus::StoppedEarly;
  } else if (starts_with(text, kPaused)) {
    s.status = RunStatus::Paused;
    s.detail = text.substr(std::string(kPaused).size());
    s.resumable = true;
  } else if (starts_with(text, kFailed)) {
    s.status = RunStatus::Failed;
    s.detail = text.substr(std::string(kFailed).size());
  } else if (starts_with(text, kStoppedBy)) {
    s.status = RunStatus::StoppedBySignal;
    s.resumable = text.find(kResumeHint) != std::string::npos;
  }
  return s;
}

std::optional<SummaryStatus> read_summary_status(const std::string& run_dir) {
  std::ifstream in(run_dir + "/results/summary.json");
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("status") || !j.at("status").is_string()) return std::nullopt;
  return SummaryStatus{parse_run_status(j.at("status").get<std::string>()), count_of(j, "step"),
                       count_of(j, "epoch")};
}

}  // namespace unitrain
