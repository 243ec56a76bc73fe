#pragma once
// RunSummary: results/summary.json, what a run did in one file (the Hugging Face Trainer's
// all_results.json, for unitrain runs), read and written by this one type. The trainer writes
// it (a fit's end, a failure, test metrics), and a resume, `unitrain report` and a sweep read
// it. It lives in log/, with the other files a run writes for people and tools to read
// (metrics.jsonl, .csv, TensorBoard's), below the engine: report/ and sweep/ read it without
// the engine, and a status is told apart by its enum, never by a text's prefix.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/train_state.h"

namespace unitrain {

/// How a run ended, as summary.json's `status` says it.
enum class RunStatus {
  Finished,         ///< "finished": trained to train.max_length
  StoppedEarly,     ///< "stopped early": a callback (early_stopping, a timer without pause)
  Paused,           ///< "paused: <why>": a checkpoint to resume from (a timer's budget)
  StoppedBySignal,  ///< "stopped by SIGTERM: ...": a signal ended it (see resumable())
  Failed,           ///< "failed: <error>"
  Unknown,          ///< any other text (a summary from another version)
};

/// summary.json's status text of `status`: "finished", "stopped early", "paused: <detail>",
/// "failed: <detail>". A signal's status (the trainer's text says how to resume) and an unknown
/// one are their `detail` as it is.
std::string run_status_text(RunStatus status, const std::string& detail = "");

/// What results/summary.json holds. Its keys and texts are the file's format, which users, the
/// report and old run folders read: a file this type wrote reads back equal, and writes the same
/// bytes again. Keys it does not know (a later version's, a tool's) are kept as they were and
/// written after its own, so a failure or test metrics written into a summary lose nothing;
/// unknown keys inside `final`, `best` and `checkpoints` are not kept.
struct RunSummary {
  using Metrics = std::map<std::string, double>;

  std::string name;
  RunStatus status = RunStatus::Unknown;
  /// A pause's why, a failure's error; the whole text of a signal's or an unknown status; "".
  std::string status_detail;
  int64_t step = 0, epoch = 0, samples = 0, skipped_steps = 0;  ///< TrainState's counters
  int64_t world_size = 1;
  /// distributed.tensor_parallel's group size (written when above 1): world_size / it replicas.
  int64_t tensor_parallel = 1;
  /// distributed.pipeline_parallel's stages (written when above 1).
  int64_t pipeline_parallel = 1;
  int64_t rollbacks = 0;        ///< train.divergence's rollbacks (written when there were any)
  double seconds = 0;           ///< training time, resumes included (written to the millisecond)
  Metrics final_train;          ///< the last training log event
  Metrics final_val;            ///< the last validation pass
  std::optional<Metrics> test;  ///< Trainer::test()'s metrics, once it ran
  std::string best_metric;      ///< checkpoint.best.metric ("": no `best`)
  double best_value = std::numeric_limits<double>::quiet_NaN();  ///< its best (NaN: none yet)
  /// Checkpoint folders ("": none); written absolute (a relative one from the working folder).
  std::string best_checkpoint, last_checkpoint, resumed_from;
  /// Top-level keys of the file that this type does not know: name -> JSON text, in file order.
  std::vector<std::pair<std::string, std::string>> other_keys;

  /// The status as the file says it (run_status_text).
  std::string status_text() const;
  /// Stopped to be resumed by running the same command: a pause, or a signal after which a
  /// checkpoint was saved ("... run the same command to resume").
  bool resumable() const;
  /// The step, epoch, samples and skipped steps of `state`.
  void set_counters(const TrainState& state);

  /// The file's text (JSON indented by one space, a newline at the end).
  std::string to_json() const;
  /// Parses the text of `where` (a path, for messages). A key it knows may be missing (an older
  /// version's file); TrainError naming `where` when the text is not a JSON object with a
  /// `status` text, or a key it knows holds another type.
  static RunSummary parse(const std::string& text, const std::string& where);

  /// run_dir/results/summary.json.
  static std::string path(const std::string& run_dir);
  /// The summary in `run_dir`; none when it has none. TrainError (parse's) when it is not one.
  static std::optional<RunSummary> read(const std::string& run_dir);
  /// As read(), but none for a file that is not a summary too: for readers to which a damaged
  /// summary says nothing (a resume's or a sweep's checks), and for writers that add to one.
  static std::optional<RunSummary> read_if_valid(const std::string& run_dir);
  /// Writes run_dir/results/summary.json atomically (the folder made when missing). TrainError
  /// naming the file when it cannot.
  void write(const std::string& run_dir) const;
};

}  // namespace unitrain
