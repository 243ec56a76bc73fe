#include "unitrain/log/run_summary.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/log/json_number.h"

namespace unitrain {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFinished = "finished";
constexpr const char* kStoppedEarly = "stopped early";
constexpr const char* kPaused = "paused: ";
constexpr const char* kFailed = "failed: ";
constexpr const char* kStoppedBy = "stopped by ";
constexpr const char* kResumeHint = "run the same command to resume";

/// The top-level keys RunSummary reads and writes, in the order it writes them.
constexpr const char* kKeys[] = {"name",       "status",          "step",
                                 "epoch",      "samples",         "skipped_steps",
                                 "world_size", "tensor_parallel", "pipeline_parallel",
                                 "rollbacks",  "seconds",         "final",
                                 "best",       "checkpoints",     "test"};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string absolute_path(const std::string& path) {
  if (path.empty()) return "";
  return std::filesystem::absolute(path).lexically_normal().string();
}

Json metrics_json(const RunSummary::Metrics& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = json_number(v);
  return j;
}

/// Reads the keys of one summary's text; every error names the file and the key. A key is
/// given as the file nests it ("final.val"); it is looked up in `o` by its last part.
class SummaryReader {
 public:
  explicit SummaryReader(const std::string& where) : where_(where) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw TrainError(where_ + " is not a run summary: " + what);
  }

  /// `o`'s value of `key`, nullptr when it has none.
  const Json* find(const Json& o, const std::string& key) const {
    const auto it = o.find(key.substr(key.rfind('.') + 1));
    return it == o.end() ? nullptr : &*it;
  }
  const Json* object(const Json& o, const std::string& key) const {
    const Json* v = find(o, key);
    if (v && !v->is_object()) wrong(key, "an object", *v);
    return v;
  }
  void read(const Json& o, const std::string& key, std::string& out) const {
    const Json* v = find(o, key);
    if (v && !v->is_string()) wrong(key, "a text", *v);
    if (v) out = v->get<std::string>();
  }
  void read(const Json& o, const std::string& key, int64_t& out) const {
    const Json* v = find(o, key);
    if (v && !v->is_number_integer()) wrong(key, "a whole number", *v);
    if (v) out = v->get<int64_t>();
  }
  void read(const Json& o, const std::string& key, double& out) const {
    if (const Json* v = find(o, key)) out = number(*v, key);
  }
  void read(const Json& o, const std::string& key, RunSummary::Metrics& out) const {
    const Json* v = object(o, key);
    if (!v) return;
    for (const auto& [name, value] : v->items()) out[name] = number(value, key + "." + name);
  }

 private:
  double number(const Json& v, const std::string& key) const {
    const std::optional<double> d = json_number_value(v);
    if (!d) wrong(key, "a number", v);
    return *d;
  }
  [[noreturn]] void wrong(const std::string& key, const char* what, const Json& v) const {
    fail("`" + key + "` is not " + what + ": " + v.dump());
  }

  std::string where_;
};

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

std::string RunSummary::status_text() const { return run_status_text(status, status_detail); }

bool RunSummary::resumable() const {
  return status == RunStatus::Paused || (status == RunStatus::StoppedBySignal &&
                                         status_detail.find(kResumeHint) != std::string::npos);
}

void RunSummary::set_counters(const TrainState& state) {
  step = state.step;
  epoch = state.epoch;
  samples = state.samples;
  skipped_steps = state.skipped_steps;
}

std::string RunSummary::to_json() const {
  Json j;
  j["name"] = name;
  j["status"] = status_text();
  j["step"] = step;
  j["epoch"] = epoch;
  j["samples"] = samples;
  j["skipped_steps"] = skipped_steps;
  j["world_size"] = world_size;
  if (tensor_parallel > 1) j["tensor_parallel"] = tensor_parallel;
  if (pipeline_parallel > 1) j["pipeline_parallel"] = pipeline_parallel;
  if (rollbacks > 0) j["rollbacks"] = rollbacks;
  j["seconds"] = std::round(seconds * 1000.0) / 1000.0;
  j["final"] = {{"train", metrics_json(final_train)}, {"val", metrics_json(final_val)}};
  if (!best_metric.empty()) {
    j["best"] = {{"metric", best_metric},
                 {"value", json_number(best_value)},
                 {"checkpoint", absolute_path(best_checkpoint)}};
  }
  j["checkpoints"] = {{"last", absolute_path(last_checkpoint)},
                      {"best", absolute_path(best_checkpoint)},
                      {"resumed_from", absolute_path(resumed_from)}};
  if (test) j["test"] = metrics_json(*test);
  for (const auto& [key, text] : other_keys) j[key] = Json::parse(text);
  return j.dump(1) + "\n";
}

RunSummary RunSummary::parse(const std::string& text, const std::string& where) {
  const SummaryReader in(where);
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) in.fail("not a JSON object");
  const Json* status = in.find(j, "status");
  if (!status || !status->is_string()) in.fail("no `status` text");
  RunSummary s;
  const std::string said = status->get<std::string>();
  if (said == kFinished) {
    s.status = RunStatus::Finished;
  } else if (said == kStoppedEarly) {
    s.status = RunStatus::StoppedEarly;
  } else if (starts_with(said, kPaused)) {
    s.status = RunStatus::Paused;
    s.status_detail = said.substr(std::string(kPaused).size());
  } else if (starts_with(said, kFailed)) {
    s.status = RunStatus::Failed;
    s.status_detail = said.substr(std::string(kFailed).size());
  } else {
    s.status = starts_with(said, kStoppedBy) ? RunStatus::StoppedBySignal : RunStatus::Unknown;
    s.status_detail = said;
  }
  in.read(j, "name", s.name);
  in.read(j, "step", s.step);
  in.read(j, "epoch", s.epoch);
  in.read(j, "samples", s.samples);
  in.read(j, "skipped_steps", s.skipped_steps);
  in.read(j, "world_size", s.world_size);
  in.read(j, "tensor_parallel", s.tensor_parallel);
  in.read(j, "pipeline_parallel", s.pipeline_parallel);
  in.read(j, "rollbacks", s.rollbacks);
  in.read(j, "seconds", s.seconds);
  if (const Json* last = in.object(j, "final")) {
    in.read(*last, "final.train", s.final_train);
    in.read(*last, "final.val", s.final_val);
  }
  if (const Json* best = in.object(j, "best")) {
    in.read(*best, "best.metric", s.best_metric);
    in.read(*best, "best.value", s.best_value);
    in.read(*best, "best.checkpoint", s.best_checkpoint);
  }
  if (const Json* ckpt = in.object(j, "checkpoints")) {  // the best one again: this one holds
    in.read(*ckpt, "checkpoints.last", s.last_checkpoint);
    in.read(*ckpt, "checkpoints.best", s.best_checkpoint);
    in.read(*ckpt, "checkpoints.resumed_from", s.resumed_from);
  }
  if (in.object(j, "test")) in.read(j, "test", s.test.emplace());
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      s.other_keys.emplace_back(key, value.dump());
  }
  return s;
}

std::string RunSummary::path(const std::string& run_dir) {
  return run_dir + "/results/summary.json";
}

std::optional<RunSummary> RunSummary::read(const std::string& run_dir) {
  const std::string file = path(run_dir);
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  return parse(std::string(std::istreambuf_iterator<char>(in), {}), file);
}

std::optional<RunSummary> RunSummary::read_if_valid(const std::string& run_dir) {
  try {
    return read(run_dir);
  } catch (const TrainError&) {
    return std::nullopt;
  }
}

void RunSummary::write(const std::string& run_dir) const {
  const std::string file = path(run_dir);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  UT_CHECK_TRAIN(!ec, "cannot write ", file, ": ", ec.message());
  write_file_atomic(file, to_json());
}

}  // namespace unitrain
