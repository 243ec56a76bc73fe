#include "unitrain/engine/results/summary_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "unitrain/core/atomic_file.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/log/json_number.h"
#include "unitrain/log/run_summary.h"

namespace unitrain {

void write_failed_summary(const std::string& run_dir, const std::string& name,
                          const TrainState& state, int world_size, const std::string& error) {
  const std::optional<RunSummary> earlier = RunSummary::read_if_valid(run_dir);
  RunSummary s = earlier.value_or(RunSummary());
  if (!earlier) s.name = name;
  s.status = RunStatus::Failed;
  s.status_detail = error;
  s.set_counters(state);
  s.world_size = world_size;
  s.write(run_dir);
}

std::string write_test_results(const std::string& run_dir, const MetricMap& m, int64_t step,
                               int64_t examples, const std::string& checkpoint) {
  nlohmann::ordered_json j;
  j["split"] = "test";
  j["checkpoint"] =
      checkpoint.empty() ? "" : std::filesystem::absolute(checkpoint).lexically_normal().string();
  j["step"] = step;
  j["examples"] = examples;
  j["metrics"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : m) j["metrics"][k] = json_number(v);
  const std::string path = run_dir + "/results/test.json";
  prepare_writable_dir(run_dir + "/results");
  write_file_atomic(path, j.dump(1) + "\n");
  if (auto summary = RunSummary::read_if_valid(run_dir)) {
    summary->test = m;
    summary->write(run_dir);
  }
  return path;
}

}  // namespace unitrain
