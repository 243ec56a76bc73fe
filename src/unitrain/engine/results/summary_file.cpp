#include "unitrain/engine/results/summary_file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/engine/results/run_status.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/log/json_number.h"

namespace unitrain {
namespace {

using Json = nlohmann::ordered_json;

Json metrics_json(const MetricMap& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = json_number(v);
  return j;
}

std::string absolute_path(const std::string& path) {
  if (path.empty()) return "";
  return std::filesystem::absolute(path).lexically_normal().string();
}

void write_json(const std::string& path, const Json& j) {
  prepare_writable_dir(std::filesystem::path(path).parent_path().string());
  write_file_atomic(path, j.dump(1) + "\n");
}

}  // namespace

std::string status_awaiting_resume(const std::string& run_dir) {
  const auto summary = read_summary_status(run_dir);
  return summary && summary->status.resumable ? summary->status.text : "";
}

std::string resume_choice(const std::string& resume, const std::string& run_dir) {
  return resume == "none" && !status_awaiting_resume(run_dir).empty() ? "auto" : resume;
}

void write_run_summary(const std::string& run_dir, const RunSummary& s) {
  Json j;
  j["name"] = s.name;
  j["status"] = s.status;
  j["step"] = s.state.step;
  j["epoch"] = s.state.epoch;
  j["samples"] = s.state.samples;
  j["skipped_steps"] = s.state.skipped_steps;
  j["world_size"] = s.world_size;
  if (s.rollbacks > 0) j["rollbacks"] = s.rollbacks;
  j["seconds"] = std::round(s.seconds * 1000.0) / 1000.0;
  j["final"] = {{"train", metrics_json(s.final_train)}, {"val", metrics_json(s.final_val)}};
  if (!s.best_metric.empty()) {
    j["best"] = {{"metric", s.best_metric},
                 {"value", json_number(s.best_value)},
                 {"checkpoint", absolute_path(s.best_checkpoint)}};
  }
  j["checkpoints"] = {{"last", absolute_path(s.last_checkpoint)},
                      {"best", absolute_path(s.best_checkpoint)},
                      {"resumed_from", absolute_path(s.resumed_from)}};
  write_json(run_dir + "/results/summary.json", j);
}

void write_failed_summary(const std::string& run_dir, const std::string& name,
                          const TrainState& state, int world_size, const std::string& error) {
  const std::string path = run_dir + "/results/summary.json";
  Json j;
  if (std::ifstream in(path); in) j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    RunSummary s;
    s.name = name;
    s.state = state;
    s.world_size = world_size;
    s.status = run_status_text(RunStatus::Failed, error);
    return write_run_summary(run_dir, s);
  }
  j["status"] = run_status_text(RunStatus::Failed, error);
  j["step"] = state.step;
  j["epoch"] = state.epoch;
  j["samples"] = state.samples;
  j["skipped_steps"] = state.skipped_steps;
  j["world_size"] = world_size;
  write_json(path, j);
}

std::string write_test_results(const std::string& run_dir, const MetricMap& m, int64_t step,
                               int64_t examples, const std::string& checkpoint) {
  Json j;
  j["split"] = "test";
  j["checkpoint"] = absolute_path(checkpoint);
  j["step"] = step;
  j["examples"] = examples;
  j["metrics"] = metrics_json(m);
  const std::string path = run_dir + "/results/test.json";
  write_json(path, j);
  const std::string summary = run_dir + "/results/summary.json";
  std::ifstream in(summary);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    Json s = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (s.is_object()) {
      s["test"] = metrics_json(m);
      write_json(summary, s);
    }
  }
  return path;
}

}  // namespace unitrain
