#include "unitrain/sweep/trial_record.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

const std::vector<std::pair<TrialStatus, const char*>> kStatusNames = {
    {TrialStatus::Running, "running"},   {TrialStatus::Stopped, "stopped"},
    {TrialStatus::Finished, "finished"}, {TrialStatus::StoppedEarly, "stopped early"},
    {TrialStatus::Failed, "failed"},     {TrialStatus::Paused, "paused"},
};

TrialStatus status_from(const std::string& name, const std::string& file) {
  for (const auto& [s, n] : kStatusNames) {
    if (name == n) return s;
  }
  throw ConfigError(file + ": unknown trial status '" + name + "'");
}

}  // namespace

const char* status_name(TrialStatus s) {
  for (const auto& [status, n] : kStatusNames) {
    if (status == s) return n;
  }
  return "?";
}

std::optional<double> TrialRecord::metric() const {
  if (rung_metrics.empty()) return std::nullopt;
  return rung_metrics.back();
}

std::vector<TrialRecord> read_trial_records(const std::string& file) {
  std::ifstream in(file);
  UT_CHECK(in, file, ": cannot read");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file + ": not a sweep state file: " + e.what());
  }
  std::vector<TrialRecord> trials;
  for (const auto& t : j.at("trials")) {
    TrialRecord r;
    r.index = t.at("trial").get<int64_t>();
    for (const auto& p : t.at("parameters")) {
      r.parameters.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
    }
    r.rung_metrics = t.at("rung_metrics").get<std::vector<double>>();
    r.target_rung = t.at("target_rung").get<int>();
    r.steps = t.at("steps").get<int64_t>();
    r.epochs = t.value("epochs", int64_t{0});  // (older sweeps: none)
    r.status = status_from(t.at("status").get<std::string>(), file);
    r.restarts = t.value("restarts", int64_t{0});
    r.error = t.value("error", std::string());
    trials.push_back(std::move(r));
  }
  return trials;
}

void write_trial_records(const std::string& file, const std::vector<TrialRecord>& trials) {
  nlohmann::json list = nlohmann::json::array();
  for (const TrialRecord& r : trials) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& [k, v] : r.parameters) params.push_back({k, v});
    list.push_back({{"trial", r.index},
                    {"parameters", params},
                    {"rung_metrics", r.rung_metrics},
                    {"target_rung", r.target_rung},
                    {"steps", r.steps},
                    {"epochs", r.epochs},
                    {"status", status_name(r.status)},
                    {"restarts", r.restarts},
                    {"error", r.error}});
  }
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"trials", list}}.dump(1) << "\n";
    UT_CHECK_TRAIN(out.good(), tmp, ": cannot write");
  }
  UT_CHECK_TRAIN(std::rename(tmp.c_str(), file.c_str()) == 0, file, ": cannot replace");
}

}  // namespace unitrain
