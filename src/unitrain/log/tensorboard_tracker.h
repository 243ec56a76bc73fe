#pragma once
// TensorBoardTracker: TensorBoard event files under <tracker dir>/tensorboard/.
#include <memory>
#include <string>
#include <vector>

#include "unitrain/log/tensorboard_events.h"
#include "unitrain/log/tracker.h"

namespace unitrain {

class TfRecordWriter;

/// Registers `tensorboard` (called by register_builtin_trackers()).
void register_tensorboard_tracker();

/// Settings of the tensorboard tracker (`log.tracker_args.tensorboard`).
struct TensorBoardOptions {
  /// Config key paths whose values (scalars, lists of scalars, and those of sections below
  /// them) are the run's hyperparameters in TensorBoard's hparams dashboard.
  std::vector<std::string> hparams = {"seed",      "model", "optimizer",
                                      "scheduler", "train", "data.loader"};
  /// Declares the tracker's args (options_of<TensorBoardOptions>()).
  static void declare(Options<TensorBoardOptions>& o);
};

/// Writes one TensorBoard event file per run segment into <RunInfo::dir>/tensorboard/ (a
/// resumed run, and a run rolled back to a checkpoint (Tracker::rewind), starts a new file; files
/// are created, never overwritten, and named so that they sort in the order written), from the
/// segment's first log event on (a segment that logs nothing leaves no file): file_version
/// "brain.Event:2" first; when resuming, a SessionLog START at the segment's first step
/// (TensorBoard then drops what an interrupted segment logged after its last checkpoint); the
/// resolved config as text (tag `config`) and the hparams session start; a scalar per metric of
/// every log event, at its step, with the wall time; at finish() the hparams experiment (the
/// hparams and the final metrics) and, when the run completed, the session end. Each record reaches
/// the file when it is logged. Without RunInfo::config_yaml (Trainer::test's logger) only the
/// scalars are written.
class TensorBoardTracker : public Tracker {
 public:
  explicit TensorBoardTracker(TensorBoardOptions options);
  ~TensorBoardTracker() override;
  void start(const RunInfo& run) override;
  void log(const LogEvent& event) override;
  void finish(const RunEnd& end) override;
  /// The events file of this segment ("" before start() or without a folder).
  std::string path() const;

 private:
  void open();
  RunInfo run_;
  TensorBoardOptions options_;
  std::unique_ptr<TfRecordWriter> writer_;
  std::vector<tensorboard::HParam> hparams_;
  int64_t last_step_ = 0;
  bool finished_ = false;
};

/// The hyperparameters of a resolved config: the values under each of `key_paths`, flattened
/// to dotted names (`optimizer.lr`); numbers, bools and strings as such, lists of scalars as
/// their YAML flow text ("[64, 256, 10]"), nulls left out. ConfigError naming `key_paths_key`
/// when a key path is not in the config.
std::vector<tensorboard::HParam> config_hparams(const std::string& config_yaml,
                                                const std::vector<std::string>& key_paths,
                                                const std::string& key_paths_key);

/// The name of a new event file in `dir`: events.out.tfevents.<seconds>.<host>.<pid>.<n>, with
/// <seconds> (10 digits) after those of every event file already there, so that files sort by
/// name in the order they were written, as TensorBoard reads them.
std::string new_event_file_name(const std::string& dir);

}  // namespace unitrain
