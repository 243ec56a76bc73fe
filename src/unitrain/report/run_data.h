#pragma once
// What `unitrain report` reads of one run folder (docs/report.md): metrics.jsonl, config.yaml,
// train.log, results/summary.json and test.json, checkpoints/ and profile/summary.json.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/report/checkpoint_list.h"
#include "unitrain/report/profile_summary.h"

namespace unitrain::report {

/// One line of metrics.jsonl: the counters and the metrics logged ("train/loss", "val/acc", ...).
/// NaN and infinities (written as strings) are read back as doubles.
struct MetricEvent {
  int64_t step = 0, epoch = 0, samples = 0;
  double time = 0;  ///< training seconds since the run started (resumes included)
  std::map<std::string, double> values;
};

/// A run folder, read leniently: what a run still in progress, stopped or without validation
/// has is there; what could not be read is named in `notes`.
/// A completion the `generate` callback wrote at a validation (samples.jsonl).
struct GeneratedSample {
  int64_t step = 0;
  std::string prompt, completion;
};

/// One start of a run — the first, or a resume — as train.log tells it: where it began, the
/// settings it trained with, and the config keys it changed.
struct RunStart {
  int64_t from_step = 0;  ///< the step it resumed from (0: the first start)
  /// name -> value: world size, batch size, accumulation, precision, threads, reader threads,
  /// BLAS (in that order; one the log does not say is left out)
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<std::string> config_changes;  ///< "optimizer.lr: 1.0e-3 -> 2e-3", said at the start
};

struct RunData {
  std::string dir;    ///< as given on the command line
  std::string label;  ///< the run's name (config `name`), made unique among the runs shown
  std::vector<MetricEvent> events;
  std::vector<std::pair<std::string, std::string>> config;  ///< flattened config.yaml, file order
  std::string status;  ///< summary.json's status, or "unfinished" without one
  bool has_summary = false;
  double seconds = 0;  ///< summary.json's seconds, else the last event's time
  int64_t step = 0, epoch = 0, samples = 0;
  std::optional<int64_t> world_size;
  std::string threads, reader_threads, blas, peak_rss;  ///< from train.log ("" = not found)
  std::vector<RunStart> starts;    ///< every start in train.log, in order (the last: the above)
  std::string peak_device_memory;  ///< the last done line's GPU peak, "123 MB (cuda:0)"; or ""
  std::string best_metric, best_checkpoint;
  std::optional<double> best_value;
  std::map<std::string, double> test_metrics;  ///< results/test.json
  std::vector<CheckpointInfo> checkpoints;     ///< by step
  std::optional<ProfileSummary> profile;
  std::vector<GeneratedSample> generated;  ///< samples.jsonl, in file order
  std::vector<std::string> notes;
};

/// Reads the run folder `dir`. ConfigError naming `dir` when it is not a run folder (no
/// config.yaml or no metrics.jsonl) or config.yaml is not valid YAML; anything else that is
/// missing or unreadable becomes a note.
RunData read_run(const std::string& dir);

/// The last value of each metric over the events (a run's latest numbers, in progress too).
std::map<std::string, double> last_values(const std::vector<MetricEvent>& events);

/// Gives each run a distinct label: its name, or its folder when two runs share a name.
void label_runs(std::vector<RunData>& runs);

}  // namespace unitrain::report
