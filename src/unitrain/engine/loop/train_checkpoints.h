#pragma once
// TrainCheckpoints: the checkpoint side of a run — when to save, the entries a checkpoint holds,
// the best one, and the restore of a resumed run.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/data/permutation.h"
#include "unitrain/engine/checkpoint_entry.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/engine/metric_map.h"

namespace unitrain {

class Checkpointer;
class Periods;
class Profiler;
class RunDecisions;
class SnapshotBuffers;
class TrainLogs;
struct RunPlan;
struct RunSettings;

/// How a run's checkpoints are laid out and written.
struct CheckpointSetup {
  CheckpointOptions options;
  std::string root;     ///< run_dir/checkpoints
  bool on = false;      ///< checkpoint.enabled, outside train.test_mode
  bool writes = false;  ///< on, and this process writes them (rank 0)
  bool shared = false;  ///< data-parallel
  /// Saves wait for a window's end: data-parallel (gradients inside a window are each rank's
  /// own), or distributed.reproducible (the window's sum so far is the sync's, not the
  /// parameters' gradients that a checkpoint keeps).
  bool at_window_ends = false;
  bool has_callbacks = false;  ///< callbacks may change parameters outside optimizer steps
  std::string config_text;     ///< the run's resolved config (config.yaml, its hash)
  std::string classes_text;    ///< classes.json: the training data's class names; "" = none
  int64_t world = 1, batch_size = 1, accumulation = 1, zero = 0;  ///< the run's layout
  int64_t threads = 0;  ///< the intra-op threads it computes with (0: not known)
  ShuffleAlgorithm data_order = kCurrentShuffle;  ///< the training loader's shuffle

  /// The setup of a run with these settings, config and plan; `shared`: data-parallel.
  static CheckpointSetup of(const RunSettings& settings, const Config& config, const RunPlan& plan,
                            bool shared, bool has_callbacks);
};

/// Saves when the policy says (a period crossed, a new best, a signal or a pause, the end),
/// from the entries added in order: each brings its files and trainer_state.json's fields or
/// its section; the counters, the stop, config.yaml and the section "checkpoints" (the best
/// value) are this class's own. Rank 0 writes.
class TrainCheckpoints {
 public:
  /// Changes nothing on disk: a resume restores (and may be refused) before the run folder
  /// changes; open() then starts the saving side. `logs`: whose events a checkpoint records,
  /// and whose settle() every save goes through first (no diverged weights saved).
  TrainCheckpoints(CheckpointSetup setup, const TrainState& counters, RunDecisions& decisions,
                   const TrainLogs& logs, Profiler* profiler);
  ~TrainCheckpoints();
  /// Once the run folder is ready: the folders of saves a crash or SIGKILL interrupted removed
  /// (rank 0).
  void open();

  /// When an entry restores in a resume: with the run's parts (before the run folder changes,
  /// so that a refusal leaves it as it was), or after on_fit_start (the callbacks' state, which
  /// on_fit_start sets up first, and the program's own entries).
  enum class Restores { WithTheRun, AfterFitStart };
  /// Entries, in the order they save and restore: owned, or parts of the run that outlive this.
  /// ConfigError when a file the entry declares (CheckpointEntry::files) is a built-in one's or
  /// another declared entry's.
  void add(CheckpointEntryPtr entry, Restores when = Restores::WithTheRun);
  void add(CheckpointEntry& entry, Restores when = Restores::WithTheRun);

  /// After a validation pass: a new best of checkpoint.best.metric is saved with the next save.
  void observe_validation(const MetricMap& val);
  /// Saves when due at this point (or when `force`); a signal or pause not acted on yet is
  /// acted on here (RunDecisions) and saved.
  void save_if_due(Periods& periods, bool force = false);
  /// Restores the entries `which` says from `resume`, once the loop has set the run's counters
  /// to its (entries restore against them); ConfigError when it stopped past the end of an
  /// epoch that now has `batches_per_epoch`. The log line begins with `how` ("resumed from",
  /// "rolled back to"). A resume restores WithTheRun's, then (restore_late) AfterFitStart's; a
  /// rollback all of them at once.
  enum class Which { All, WithTheRun };
  void restore(const ResumePoint& resume, int64_t batches_per_epoch, int rank,
               const char* how = "resumed from", Which which = Which::All);
  /// A resume's AfterFitStart entries, after on_fit_start.
  void restore_late(const ResumePoint& resume, int rank);
  /// The folder of the last checkpoint saved (or resumed from), once written (a save in
  /// flight is waited for): where a rollback goes. "" when there is none.
  std::string rollback_point();
  /// Waits for an async save's parameter copies: the optimizer may change parameters now.
  void fence();
  /// After the loop: the writer drained.
  void finish();

  double best_value() const { return best_value_; }
  const std::string& last_checkpoint() const { return last_checkpoint_; }
  int64_t saves() const;
  double blocking_seconds() const { return blocking_seconds_; }
  double write_seconds() const;

 private:
  /// What the last save recorded: a save at the same point is skipped, unless the run has
  /// stopped or logged since (its checkpoint must say so).
  struct SavePoint {
    int64_t samples = -1;
    bool stopped = false;
    int64_t log_events = -1;
    bool operator==(const SavePoint& o) const {
      return samples == o.samples && stopped == o.stopped && log_events == o.log_events;
    }
  };
  SavePoint here() const;
  bool due(Periods& periods, bool force);
  void save();
  void write(CheckpointWrite& out);
  CheckpointSetup setup_;
  const TrainState& counters_;
  RunDecisions& decisions_;
  const TrainLogs& logs_;
  Profiler* profiler_;
  std::vector<CheckpointEntryPtr> owned_;
  std::vector<CheckpointEntry*> entries_;
  std::vector<bool> late_;          ///< per entry: it restores after on_fit_start
  std::set<std::string> declared_;  ///< the files entries declared (CheckpointEntry::files)
  std::unique_ptr<Checkpointer> checkpointer_;         ///< rank 0's
  std::shared_ptr<SnapshotBuffers> snapshot_buffers_;  ///< reused by async saves
  double best_value_;            ///< checkpoint.best.metric's best value (NaN: none yet)
  bool changes_said_ = false;    ///< the config's changes since the checkpoint (said once)
  bool want_best_save_ = false;  ///< validation just improved the best metric
  bool save_pending_ = false;    ///< data-parallel: a save due inside a window, at its end
  SavePoint saved_;
  std::string last_checkpoint_;
  double blocking_seconds_ = 0;
};

}  // namespace unitrain
