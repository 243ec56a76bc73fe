#include "unitrain/engine/run_summary.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unitrain/engine/run_env.h"

namespace unitrain {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity: they are written as null.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json metrics(const MetricMap& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = number(v);
  return j;
}

std::string absolute(const std::string& path) {
  if (path.empty()) return "";
  return std::filesystem::absolute(path).lexically_normal().string();
}

void write_json(const std::string& path, const Json& j) {
  prepare_writable_dir(std::filesystem::path(path).parent_path().string());
  write_file_atomic(path, j.dump(1) + "\n");
}

}  // namespace

void write_run_summary(const std::string& run_dir, const RunSummary& s) {
  Json j;
  j["name"] = s.name;
  j["status"] = s.status;
  j["step"] = s.state.step;
  j["epoch"] = s.state.epoch;
  j["samples"] = s.state.samples;
  j["skipped_steps"] = s.state.skipped_steps;
  j["world_size"] = s.world_size;
  j["seconds"] = std::round(s.seconds * 1000.0) / 1000.0;
  j["final"] = {{"train", metrics(s.final_train)}, {"val", metrics(s.final_val)}};
  if (!s.best_metric.empty()) {
    j["best"] = {{"metric", s.best_metric},
                 {"value", number(s.best_value)},
                 {"checkpoint", absolute(s.best_checkpoint)}};
  }
  j["checkpoints"] = {{"last", absolute(s.last_checkpoint)},
                      {"best", absolute(s.best_checkpoint)},
                      {"resumed_from", absolute(s.resumed_from)}};
  write_json(run_dir + "/results/summary.json", j);
}

std::string write_test_results(const std::string& run_dir, const MetricMap& m, int64_t step,
                               int64_t examples, const std::string& checkpoint) {
  Json j;
  j["split"] = "test";
  j["checkpoint"] = absolute(checkpoint);
  j["step"] = step;
  j["examples"] = examples;
  j["metrics"] = metrics(m);
  const std::string path = run_dir + "/results/test.json";
  write_json(path, j);
  const std::string summary = run_dir + "/results/summary.json";
  std::ifstream in(summary);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    Json s = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (s.is_object()) {
      s["test"] = metrics(m);
      write_json(summary, s);
    }
  }
  return path;
}

}  // namespace unitrain
