#pragma once
// FitResult: what Trainer::fit() returns (trainer.h provides it to the Trainer's users).
#include <cstdint>
#include <string>

#include "unitrain/core/train_state.h"
#include "unitrain/engine/metric_map.h"

namespace unitrain {

/// What Trainer::fit() returns. Also written to run_dir/results/summary.json.
struct FitResult {
  TrainState state;
  /// A stop was decided (Trainer::request_stop: early stopping, a timer without pause): the
  /// run is finished before train.max_length, and a resume trains nothing.
  bool stopped = false;
  MetricMap last_train;  ///< the last training log event's metrics
  MetricMap last_val;    ///< the last validation pass's metrics (empty without val data)
  double seconds = 0;
  double data_wait_seconds = 0;  ///< time the loop waited for the loader
  std::string resumed_from;      ///< the checkpoint this run resumed from ("" = fresh start)
  std::string last_checkpoint;   ///< the last checkpoint written ("" = none)
  int64_t checkpoints_saved = 0;
  /// Seconds training waited for checkpoint saves (the whole save when synchronous; the
  /// snapshot copies, or a previous save still being written, when async) and seconds spent
  /// serialising and writing them.
  double checkpoint_blocking_seconds = 0;
  double checkpoint_write_seconds = 0;
  /// SIGINT or a checkpoint.on_signal signal that stopped training (after a checkpoint), or 0.
  int signal = 0;
  /// Such a signal received once training was complete (in the last step, or during the last
  /// validation): it stopped nothing, the run finished as it would have (final checkpoint
  /// included), `signal` is 0 and `exit_code` too. What follows fit() should not start long
  /// work (`unitrain train` leaves the test split for the same command run again).
  int signal_after_end = 0;
  /// The exit status `unitrain train` returns: 0; after a signal, 130 for SIGINT and
  /// checkpoint.on_signal.exit_code for the others ("saved, run the same command to resume"),
  /// or 128 + the signal when checkpoints are off (nothing to resume from); after a pause,
  /// checkpoint.on_signal.exit_code too (0 when checkpoints are off).
  int exit_code = 0;
  /// Why the run paused (Trainer::request_pause: a time budget), or "". A paused run saved a
  /// checkpoint and resumes from it when run again.
  std::string paused;
  /// True when the run was already complete when fit() started (a finished run run again):
  /// nothing was trained, and the fields above describe the run from its last checkpoint.
  bool already_complete = false;
  /// Rollbacks to the last checkpoint over the run (train.divergence), resumes included.
  int64_t rollbacks = 0;
  /// Bytes of this rank's optimizer state at the end of training (ZeRO 3 frees it before fit()
  /// returns); -1 when not counted (manual optimization, a run that trained nothing).
  int64_t optimizer_state_bytes = -1;
};

}  // namespace unitrain
