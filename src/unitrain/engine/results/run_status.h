#pragma once
// RunStatus: how a run ended, as results/summary.json's `status` says it — written and read in
// one place, so that a sweep, the report and a resume tell "stopped early" from "finished"
// by a type, not by comparing texts.
#include <cstdint>
#include <optional>
#include <string>

namespace unitrain {

enum class RunStatus {
  Finished,      ///< "finished": trained to train.max_length
  StoppedEarly,  ///< "stopped early": a callback (early_stopping, a timer without pause) ended it
  Paused,        ///< "paused: <why>": a checkpoint to resume from (a timer's budget)
  StoppedBySignal,  ///< "stopped by SIGTERM: ...": a signal ended it (see resumable)
  Failed,           ///< "failed: <error>"
  Unknown,          ///< anything else (a summary from another version)
};

/// summary.json's status text of `status` ("finished", "stopped early", "paused: <detail>",
/// "failed: <detail>"). StoppedBySignal and Unknown are written by the trainer in full (the
/// signal's text says how to resume): their text is `detail`.
std::string run_status_text(RunStatus status, const std::string& detail = "");

/// A status text read back.
struct StatusText {
  RunStatus status = RunStatus::Unknown;
  std::string text;    ///< as written
  std::string detail;  ///< a pause's why, a failure's error; "" for the others
  /// Stopped to be resumed by running the same command: a pause, or a signal after which a
  /// checkpoint was saved ("... run the same command to resume").
  bool resumable = false;
};
StatusText parse_run_status(const std::string& text);

/// What results/summary.json in `run_dir` says of how the run ended and where.
struct SummaryStatus {
  StatusText status;
  int64_t step = 0, epoch = 0;
};
/// none when `run_dir` has no results/summary.json, or it is not a JSON object with a `status`
/// text.
std::optional<SummaryStatus> read_summary_status(const std::string& run_dir);

}  // namespace unitrain
