#include "unitrain/report/run_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/core/error.h"
#include "unitrain/log/run_summary.h"
#include "unitrain/report/config_diff.h"
#include "unitrain/report/json_read.h"

namespace unitrain::report {
namespace {

namespace fs = std::filesystem;

int64_t count_of(const nlohmann::json& o, const char* key) {
  return o.contains(key) && o[key].is_number() ? o[key].get<int64_t>() : int64_t(0);
}

void read_events(const std::string& path, RunData& run) {
  std::ifstream in(path);
  int64_t line_no = 0, bad = 0, first_bad = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step")) {
      if (bad++ == 0) first_bad = line_no;
      continue;
    }
    MetricEvent e;
    e.step = count_of(j, "step");
    e.epoch = count_of(j, "epoch");
    e.samples = count_of(j, "samples");
    e.time = j.contains("time") && j["time"].is_number() ? j["time"].get<double>() : 0.0;
    for (const auto& [k, v] : j.items()) {
      if (k == "step" || k == "epoch" || k == "samples" || k == "time") continue;
      if (const auto d = json_double(v)) e.values[k] = *d;
    }
    run.events.push_back(std::move(e));
  }
  // A run in progress may be writing the last line: say so only for lines before it, or many.
  if (bad > 1 || (bad == 1 && first_bad != line_no)) {
    run.notes.push_back(detail::concat(path, ": ", bad,
                                       " line(s) are not JSON objects with a step "
                                       "(first: line ",
                                       first_bad, "); skipped"));
  }
}

void read_summary(const std::string& dir, RunData& run) {
  std::optional<RunSummary> s;
  try {
    s = RunSummary::read(dir);
  } catch (const TrainError& e) {
    run.status = "unknown";
    run.notes.push_back(e.what());
    return;
  }
  if (!s) {
    run.status = "unfinished";
    run.notes.push_back("no results/summary.json: the run is in progress or was interrupted");
    return;
  }
  run.has_summary = true;
  run.status = s->status_text();
  if (s->rollbacks > 0) {  // train.divergence
    run.status += fmt::format(" ({} rollback{})", s->rollbacks, s->rollbacks == 1 ? "" : "s");
  }
  run.step = s->step;
  run.epoch = s->epoch;
  run.samples = s->samples;
  run.seconds = s->seconds;
  run.world_size = s->world_size;
  if (!s->best_metric.empty()) {
    run.best_metric = s->best_metric;
    run.best_checkpoint = s->best_checkpoint;
    if (!std::isnan(s->best_value)) run.best_value = s->best_value;
  }
}

void read_test_results(const std::string& dir, RunData& run) {
  const std::string path = dir + "/results/test.json";
  const auto j = read_json_object(path);
  if (!j) return;
  if (j->is_discarded() || !j->contains("metrics") || !(*j)["metrics"].is_object()) {
    run.notes.push_back(path + " has no \"metrics\" object; not shown");
    return;
  }
  for (const auto& [k, v] : (*j)["metrics"].items()) {
    if (const auto d = json_double(v)) run.test_metrics[k] = *d;
  }
}

/// The hardware lines of train.log: each start's "training: ..." line (a resumed run has
/// several; the last gives the run's threads and BLAS) with the lines before it that say where
/// and how it started, and the last "done: ..." line.
void read_train_log(const std::string& dir, RunData& run) {
  std::ifstream in(dir + "/train.log");
  if (!in) {
    run.notes.push_back("no train.log: threads and BLAS unknown");
    return;
  }
  static const std::regex training(
      R"(training: .*threads (\d+), reader threads (\d+), BLAS (.*?)\s*$)");
  static const std::regex batch(R"(batches/epoch of (\d+), accumulation (\d+))");
  static const std::regex precision(R"(; precision (\S+),)");
  static const std::regex world(R"(\] data parallel: rank \d+ of (\d+) )");
  static const std::regex resumed(R"(\] resumed from .*: epoch \d+, step (\d+),)");
  static const std::regex changed(
      R"(\] config changed since the checkpoint: (.*?)(?: \(it applies from step .*)?\s*$)");
  static const std::regex peak(R"((?:done|stopped by \S+): .*peak RSS (\d+) MB)");
  static const std::regex device_peak(R"(; peak (\S+) memory (\d+) MB)");  // on a GPU
  std::smatch m;
  RunStart next;  // what the lines before the next "training: ..." line said
  std::string world_size = "1";
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, world)) {
      world_size = m[1];
    } else if (std::regex_search(line, m, resumed)) {
      next.from_step = std::stoll(m[1]);
    } else if (std::regex_search(line, m, changed)) {
      next.config_changes.push_back(m[1]);
    } else if (std::regex_search(line, m, training)) {
      run.threads = m[1];
      run.reader_threads = m[2];
      run.blas = m[3];
      next.settings.emplace_back("world size", world_size);
      if (std::smatch b; std::regex_search(line, b, batch)) {
        next.settings.emplace_back("batch size", b[1]);
        next.settings.emplace_back("accumulation", b[2]);
      }
      if (std::smatch p; std::regex_search(line, p, precision))
        next.settings.emplace_back("precision", p[1]);
      next.settings.emplace_back("threads", run.threads);
      next.settings.emplace_back("reader threads", run.reader_threads);
      next.settings.emplace_back("BLAS", run.blas);
      run.starts.push_back(std::move(next));
      next = RunStart();
      world_size = "1";
    } else if (std::regex_search(line, m, peak)) {
      run.peak_rss = std::string(m[1]) + " MB";
      run.peak_device_memory = std::regex_search(line, m, device_peak)
                                   ? std::string(m[2]) + " MB (" + std::string(m[1]) + ")"
                                   : "";
    }
  }
}

void read_profile(const std::string& dir, RunData& run) {
  const std::string path = dir + "/profile/summary.json";
  const auto text = read_text_file(path);
  if (!text) return;
  try {
    run.profile = parse_profile_summary(*text, path);
  } catch (const ConfigError& e) {
    run.notes.push_back(std::string(e.what()) + "; the profile is not shown");
  }
}

/// The `generate` callback's samples.jsonl, when there is one; a bad line becomes a note.
void read_samples(const std::string& dir, RunData& run) {
  const auto text = read_text_file(dir + "/samples.jsonl");
  if (!text) return;
  std::istringstream lines(*text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() ||
        !j.value("prompt", nlohmann::json()).is_string() ||
        !j.value("completion", nlohmann::json()).is_string()) {
      run.notes.push_back("samples.jsonl line " + std::to_string(n) + " is not a sample");
      continue;
    }
    GeneratedSample sample{j["step"].get<int64_t>(), j["prompt"].get<std::string>(),
                           j["completion"].get<std::string>()};
    // A resumed run generates again at the steps after its checkpoint: the later line holds.
    auto same = std::find_if(run.generated.begin(), run.generated.end(), [&](const auto& g) {
      return g.step == sample.step && g.prompt == sample.prompt;
    });
    if (same != run.generated.end()) {
      *same = std::move(sample);
    } else {
      run.generated.push_back(std::move(sample));
    }
  }
}

}  // namespace

RunData read_run(const std::string& dir) {
  UT_CHECK(fs::is_directory(dir), "report: ", dir,
           " is not a folder; give run folders such as "
           "runs/<name> (the run_dir of a config)");
  for (const char* file : {"config.yaml", "metrics.jsonl"}) {
    UT_CHECK(fs::is_regular_file(fs::path(dir) / file), "report: ", dir,
             " is not a run folder: it "
             "has no ",
             file, "; give the run_dir of a run that has started (e.g. runs/<name>)");
  }
  RunData run;
  run.dir = dir;
  const Config config = Config::from_file(dir + "/config.yaml");
  UT_CHECK(config.node().IsMap(), "report: ", dir, "/config.yaml is not a YAML map of keys");
  run.config = flatten_config(config);
  run.label = config.has("name") && config.node()["name"].IsScalar()
                  ? config.get_string("name")
                  : fs::path(dir).filename().string();
  read_events(dir + "/metrics.jsonl", run);
  read_summary(dir, run);
  if (!run.has_summary && !run.events.empty()) {
    const MetricEvent& last = run.events.back();
    run.step = last.step;
    run.epoch = last.epoch;
    run.samples = last.samples;
    run.seconds = last.time;
  }
  read_test_results(dir, run);
  read_train_log(dir, run);
  run.checkpoints = read_checkpoints(dir, run.notes);
  if (!run.world_size) {
    const std::string file = dir + "/checkpoints/last/" + checkpoint_files::kTrainerState;
    if (const auto text = read_text_file(file)) {
      try {
        run.world_size = TrainerStateFile::parse(*text, file).world_size;
      } catch (const std::exception&) {  // read_checkpoints noted it
      }
    }
  }
  read_profile(dir, run);
  read_samples(dir, run);
  if (run.events.empty()) run.notes.push_back("metrics.jsonl has no events yet");
  return run;
}

std::map<std::string, double> last_values(const std::vector<MetricEvent>& events) {
  std::map<std::string, double> out;
  for (const auto& e : events) {
    for (const auto& [k, v] : e.values) out[k] = v;
  }
  return out;
}

void label_runs(std::vector<RunData>& runs) {
  std::map<std::string, int> uses;
  for (const auto& r : runs) ++uses[r.label];
  std::set<std::string> taken;
  for (auto& r : runs) {
    std::string label = uses[r.label] > 1 ? r.dir : r.label;
    for (int n = 2; !taken.insert(label).second; ++n)
      label = r.dir + " (" + std::to_string(n) + ")";
    r.label = label;
  }
}

}  // namespace unitrain::report
