#pragma once
// Trainer::Loop: the state of one fit() — loaders, schedule, logger, checkpoints, running sums.
// Private to the engine: trainer.cpp runs it, trainer_checkpoint.cpp saves and restores it.
#include <chrono>
#include <memory>
#include <string>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/lr_controller.h"
#include "unitrain/engine/resume_config.h"
#include "unitrain/engine/step_runner.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/metrics/metric_accumulator.h"

namespace unitrain {

class SnapshotBuffers;
class ProcessGroup;

using Clock = std::chrono::steady_clock;

/// What a checkpoint to resume from holds besides tensors, read (and checked against this run's
/// config) before the run folder or the loop is touched.
struct ResumePoint {
  std::string dir;          ///< "" = a fresh start
  int64_t log_events = -1;  ///< events in metrics.jsonl when it was saved
  int64_t world_size = 1;   ///< processes that wrote it
  TrainState state;         ///< its counters
  std::string state_text;   ///< its trainer_state.json, read once (restore() reads the rest)
  std::vector<ConfigChange> config_changes;  ///< since it was saved
};

struct Trainer::Loop {
  Trainer& t;
  TrainModule& module;
  Loader train_loader;
  std::unique_ptr<Loader> val_loader;
  int64_t accumulation = 1;
  int64_t batches_per_epoch = 0;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;  ///< optimizer steps of the whole run (estimate for samples)
  std::unique_ptr<LrController> lr;
  std::unique_ptr<StepRunner> runner;
  /// Data-parallel runs: the group of processes (null for one process), this one's rank.
  std::shared_ptr<ProcessGroup> group;
  int rank = 0;
  int world = 1;
  bool broadcast_buffers = false;  ///< rank 0's buffers to every rank at each window's start
  int agreed_signal = 0;           ///< a stop signal any rank received (agreed each step)
  std::unique_ptr<GradientSync> sync;
  RunLogger logger;
  MetricAccumulator train_sums;
  FitResult result;
  Clock::time_point start = Clock::now();
  double time_offset = 0;  ///< seconds of training before a resume
  int64_t last_val_step = -1;

  CheckpointOptions ckpt_options;
  EarlyStoppingOptions early;
  std::unique_ptr<Checkpointer> checkpointer;
  std::shared_ptr<SnapshotBuffers> snapshot_buffers;  ///< reused by async saves
  double best_value;             ///< checkpoint.best.metric's best value (NaN: none yet)
  bool want_best_save = false;   ///< validation just improved the best metric
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
  SavePoint saved;
  SavePoint here() const { return {t.state_.samples, t.state_.should_stop, logger.events()}; }
  bool save_pending = false;     ///< data-parallel: a save due inside a window, at its end

  Loop(Trainer& trainer, TrainModule& m, DatasetPtr train, DatasetPtr val,
       const ResumePoint& resume, std::shared_ptr<ProcessGroup> group);
  ~Loop();

  int64_t window_samples(int64_t b) const;
  double elapsed() const;
  LogEvent event(MetricMap metrics) const;
  void log_train();
  /// The step's shared decisions (data-parallel runs), sent with the gradients: whether this
  /// rank saw a non-finite loss, asked to stop, or received SIGINT / SIGTERM.
  std::vector<float> shared_flags(bool bad) const;
  /// The same summed over ranks: any stop or signal applies to every rank.
  void agree(const std::vector<float>& flags);
  /// The stop signal to act on: this process's, or in data-parallel runs the agreed one.
  int stop_signal() const;
  void validate();
  void early_stopping(const MetricMap& m);
  bool length_reached() const;
  /// The run's last log events (train sums left, a validation at the last step), logged before
  /// its last checkpoint so that the checkpoint holds them.
  void finish_logs();
  /// One epoch (or what is left of it); returns false when training must end.
  bool run_epoch();

  // trainer_checkpoint.cpp
  /// Saves when the checkpoint policy asks for it at this point (period crossed, a new best,
  /// a stop signal) or when `force`.
  void maybe_save(bool stepped, int64_t samples_before, bool epoch_end, bool force = false);
  void save();
  /// Restores everything a checkpoint holds; called after the optimizer and schedule exist.
  void restore(const ResumePoint& resume);
};

/// Reads what must be known of `dir` before the loop is built (trainer_state.json, config.yaml)
/// and checks that `current` can resume from it (check_resume_config's ConfigError otherwise).
ResumePoint read_resume_point(const std::string& dir, const Config& current);

}  // namespace unitrain
