#pragma once
// Trainer::Loop: the parts of one fit(), each owning its state — the plan and periods, the data,
// the step, the schedule, the logs, the checkpoints — and the named calls fit() makes in order.
// Private to the engine: trainer.cpp runs it, trainer_loop.cpp steps it, trainer_checkpoint.cpp
// saves and restores it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/lr_controller.h"
#include "unitrain/engine/periods.h"
#include "unitrain/engine/resume_config.h"
#include "unitrain/engine/run_plan.h"
#include "unitrain/engine/run_settings.h"
#include "unitrain/engine/step_runner.h"
#include "unitrain/engine/thread_governor.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/metrics/metric_accumulator.h"
#include "unitrain/profile/profiler.h"

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
  int64_t batch_size = 0;   ///< per process, as it trained (0: not recorded, the config's)
  int64_t accumulation = 0; ///< micro-batches per step, as it trained (0: the config's)
  TrainState state;         ///< its counters
  std::string state_text;   ///< its trainer_state.json, read once (restore() reads the rest)
  std::vector<ConfigChange> config_changes;  ///< since it was saved
};

/// What the last save recorded: a save at the same point is skipped, unless the run has stopped
/// or logged since (its checkpoint must say so).
struct SavePoint {
  int64_t samples = -1;
  bool stopped = false;
  int64_t log_events = -1;
  bool operator==(const SavePoint& o) const {
    return samples == o.samples && stopped == o.stopped && log_events == o.log_events;
  }
};

struct Trainer::Loop {
  Loop(Trainer& trainer, TrainModule& module, DatasetPtr train, DatasetPtr val,
       const ResumePoint& resume, std::shared_ptr<ProcessGroup> group);
  ~Loop();

  // --- The run, as fit() reads it --------------------------------------------------------
  /// Builds the step and the schedule around the optimizer fit() configured.
  void start(torch::optim::Optimizer& optimizer, SchedulerPtr schedule);
  /// Restores everything a checkpoint holds (trainer_checkpoint.cpp).
  void restore(const ResumePoint& resume);
  /// The model's weights from `dir`/model.pt (bf16-true: into the float32 masters too).
  void restore_model(const std::string& dir);
  /// The optimizer's state from `dir`: optimizer.pt, or the partitions of a ZeRO run.
  void restore_optimizer(const std::string& dir);
  /// Logs what the run will do; notes a run that is already complete.
  /// The run's first lines: sizes, threads (and why), loader, BLAS.
  void announce();
  /// Training is over: the length is reached at a window's end, a stop was decided, a pause
  /// or a signal acted on, or the run was complete before it started.
  bool finished() const;
  /// The next micro-batch of the current epoch (starting one when none is running); nullopt
  /// when the epoch has none left.
  std::optional<Batch> next_batch();
  /// Forward and backward of `batch`, weighted by its share of its window.
  MicroStep forward_backward(const Batch& batch);
  /// Waits for an async save's parameter copies: the optimizer may change parameters now.
  void fence_snapshot();
  /// Counts the micro-batch (samples, running sums) and, at a window's end, the step: the
  /// schedule, the decisions the ranks agreed on, on_step_end, the progress bar.
  void count(const Batch& batch, const MicroStep& m);
  /// At a window's end: logs and validates when their periods say so (and at the run's end).
  void log_and_validate();
  /// Saves when the checkpoint policy asks for it at this point (a period crossed, a new
  /// best, a stop signal) or when `force` (trainer_checkpoint.cpp).
  void save_if_due(bool force = false);
  bool epoch_complete() const;
  /// The epoch's end: counters, the per-epoch schedule, on_epoch_end, epoch-period logs,
  /// validation and saves.
  void end_epoch();
  /// After the loop: the last log events and the final save, the writer drained.
  void finish();

  // --- Its parts -------------------------------------------------------------------------
  Trainer& trainer;          ///< for callbacks, which receive it
  CallbackList& hooks;       ///< the Trainer's callbacks
  TrainState& state;         ///< the Trainer's counters
  const RunSettings& settings;
  TrainModule& module;
  std::shared_ptr<ProcessGroup> group;  ///< null for one process
  RunPlan plan;
  Periods periods;
  Loader train_loader;
  std::unique_ptr<Loader> val_loader;
  std::unique_ptr<EpochIterator> epoch_batches;  ///< the running epoch's
  std::unique_ptr<GradientSync> sync;
  std::unique_ptr<StepRunner> steps;
  std::unique_ptr<OptimizerSharding> sharding;  ///< distributed.zero >= 1 with several ranks
  std::vector<int> gradient_owners;  ///< distributed.zero: 2: each parameter's, by model order
  std::unique_ptr<LrController> lr;
  RunLogger logger;
  std::unique_ptr<Profiler> profiler;  ///< null unless profile.enabled
  std::unique_ptr<ThreadGovernor> threads;  ///< intra-op threads; follows the load when auto
  MetricAccumulator train_sums;
  FitResult result;
  Clock::time_point start_time = Clock::now();
  double time_offset = 0;  ///< seconds of training before a resume
  int64_t last_val_step = -1;
  bool broadcast_buffers = false;  ///< rank 0's buffers to every rank at each window's start
  int agreed_signal = 0;           ///< a stop signal any rank received (agreed each step)
  bool agreed_pause = false;       ///< a pause any rank asked for (agreed each step)

  // Checkpoints (rank 0 writes them).
  std::unique_ptr<Checkpointer> checkpointer;
  std::shared_ptr<SnapshotBuffers> snapshot_buffers;  ///< reused by async saves
  double best_value;            ///< checkpoint.best.metric's best value (NaN: none yet)
  bool want_best_save = false;  ///< validation just improved the best metric
  bool save_pending = false;    ///< data-parallel: a save due inside a window, at its end
  /// checkpoint.every: auto — the last save on rank 0's clock (or the start), and what the
  /// ranks agreed of it at the last optimizer step.
  Clock::time_point last_save_time = Clock::now();
  bool auto_save_soon = false;
  bool auto_save_now = false;
  /// Sets `d`'s save_soon/save_now from this process's clock (rank 0's is the one that counts).
  void read_save_clock(StepDecision& d) const;
  SavePoint saved;

  // --- Helpers ---------------------------------------------------------------------------
  SavePoint here() const { return {state.samples, state.should_stop, logger.events()}; }
  double elapsed() const;
  LogEvent event(MetricMap metrics) const;
  /// The stop signal to act on: this process's, or in data-parallel runs the agreed one.
  int stop_signal() const;
  /// A pause to act on: this process's request, or in data-parallel runs the agreed one.
  bool pause_requested() const;
  bool length_reached() const;
  void log_train();
  void validate();
  /// Data-parallel: after a validation pass (every rank runs it), a stop any rank's callbacks
  /// asked for stops every rank now.
  void agree_on_stop();
  /// The run's last log events (train sums left, a validation at the last step), logged
  /// before its last checkpoint so that the checkpoint holds them.
  void finish_logs();
  void close_epoch_batches();
  /// The profile's table to the log, its files to run_dir/profile.
  void write_profile();
  void save();
};

/// Reads what must be known of `dir` before the loop is built (trainer_state.json, config.yaml)
/// and checks that `current` can resume from it (check_resume_config's ConfigError otherwise).
ResumePoint read_resume_point(const std::string& dir, const Config& current);

}  // namespace unitrain
