#pragma once
// TrainLoop: one fit()'s parts — the plan and periods, the data, the step, the schedule, the
// logs, the checkpoints — each built from what it needs, and the named calls fit() makes in
// order. Private to the engine: trainer.cpp builds and runs it.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/train_state.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/checkpoint_entry.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/fit_result.h"
#include "unitrain/engine/loop/loop_data.h"
#include "unitrain/engine/loop/loop_optimizers.h"
#include "unitrain/engine/loop/module_run.h"
#include "unitrain/engine/loop/periods.h"
#include "unitrain/engine/loop/train_checkpoints.h"
#include "unitrain/engine/loop/train_logs.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/engine/step/process_step.h"
#include "unitrain/engine/step/step_graph.h"
#include "unitrain/log/run_logger.h"
#include "unitrain/metrics/metric_accumulator.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/optim/scheduler.h"
#include "unitrain/parallel/parallel_plan.h"
#include "unitrain/profile/profiler.h"
#include "unitrain/threads/thread_governor.h"

namespace unitrain {

class PipelineStage;
class PipelineStep;

class ParameterState;
class Precision;
class ProcessGroup;
struct TensorCut;
class ShardedParameters;
class RunDecisions;
class RunPosition;

/// What a TrainLoop is built from: the run's settings and the parts that the Trainer keeps
/// across fit() calls (callbacks, decisions, precision) or built for this one.
struct LoopInputs {
  const RunSettings& settings;
  const Config& config;  ///< the resolved config (metrics files, checkpoints)
  CallbackList& callbacks;
  RunDecisions& decisions;
  Precision& precision;
  TrainModule& module;
  std::shared_ptr<ProcessGroup> group;      ///< null for one process
  std::unique_ptr<ThreadGovernor> threads;  ///< intra-op threads; their waits follow the load
  /// distributed.tensor_parallel's groups (its tensor 1: the data-parallel group is `group`).
  ParallelPlan parallel{};
};

class TrainLoop {
 public:
  TrainLoop(LoopInputs in, DatasetPtr train, DatasetPtr val, const ResumePoint& resume);
  ~TrainLoop();

  /// The optimizers of the fit for its plan: the Trainer's (automatic optimization) or the
  /// module's own (manual: `optimizers.manual()`).
  using OptimizerFactory = std::function<std::unique_ptr<LoopOptimizers>(const RunPlan&)>;

  // --- The run, as fit() calls it, in this order -----------------------------------------
  /// Builds the step around the optimizers `make` returns for the plan. Every refusal of the
  /// run's parts (manual optimization's settings, L-BFGS's precisions, ZeRO 3 of a model without
  /// units) comes from here, before the run folder changes: nothing is written.
  void start(const OptimizerFactory& make);
  /// The run's checkpoints, with every entry a checkpoint holds (nothing written yet): the
  /// run's parts', then `program_entries` (Trainer::add_checkpoint_entry's), which restore
  /// after on_fit_start.
  void list_checkpoints(const std::vector<std::shared_ptr<CheckpointEntry>>& program_entries);
  /// Restores what a checkpoint holds of the run's parts, exactly where it was saved, before
  /// the run folder changes: what refuses the resume (a model or optimizer that does not fit,
  /// an epoch of other length, another base under LoRA's adapters) leaves the folder as it
  /// was. The callbacks' state and the program's own entries come after on_fit_start
  /// (restore_callbacks).
  void restore(const ResumePoint& resume);
  /// Once the run folder is ready: the run's logs (trackers, metrics files cut back to the
  /// checkpoint's) and the checkpoints' writer.
  void open_run_files(const ResumePoint& resume);
  /// After on_fit_start: the callbacks' state and the program's entries the checkpoint holds.
  void restore_callbacks(const ResumePoint& resume);
  /// The run's first lines: sizes, threads (and why), loader, BLAS. True when the run was
  /// complete before it started (nothing to train).
  bool announce();
  /// Trains until the run is finished: the length is reached at a window's end, a stop was
  /// decided, a pause or a signal acted on, or the run was complete before it started. Each
  /// micro-batch: fetch, forward/backward; at a window's end gradient sync, clip, the update
  /// (or a rollback); then count, log, validate, save. Then the last logs and the final save.
  /// Each phase is marked in `position` (what the stall watchdog and the flight records name).
  void run(RunPosition& position);

  // --- What the Trainer reads of it -------------------------------------------------------
  /// The run's counters, which the loop alone writes (what callbacks see as trainer.state()):
  /// zeros until restore() sets a resume's.
  const TrainState& counters() const { return counters_; }
  const RunPlan& plan() const { return plan_; }
  /// Where the module trains (train.device), from start() on.
  const torch::Device& device() const { return step_->device(); }
  ProcessGroup* group() const { return group_.get(); }
  /// distributed.tensor_parallel's group size (1 without).
  int tensor_parallel() const;
  /// distributed.pipeline_parallel's stages (1 without).
  int pipeline_parallel() const;
  bool sharded() const { return step_ && step_->sharded(); }
  /// distributed.zero: 3's parameters (null otherwise).
  const ShardedParameters* sharded_parameters() const {
    return step_ ? step_->sharded_parameters() : nullptr;
  }
  /// distributed.pipeline_parallel's share of the step (null otherwise).
  const PipelineStep* pipeline() const { return step_ ? step_->pipeline() : nullptr; }
  /// The module it trains.
  TrainModule& module() const { return module_; }
  double best_value() const { return checkpoints_->best_value(); }
  int64_t log_events() const { return logs_.logger().events(); }
  /// Seconds trained, over every segment of the run (or, complete before it started, the
  /// segments before).
  double seconds() const;
  /// The loop's part of FitResult (Trainer::conclude adds the counters and seconds).
  FitResult result() const;
  /// profile.enabled's results once the run has finished (Trainer::conclude writes them), or
  /// null.
  const ProfileResult* profile() const { return profiler_ ? profiler_->result() : nullptr; }
  /// Trainer::log_mean: a value for the next training log event.
  void add_train_mean(const std::string& name, double value);
  void add_train_mean(const std::string& name, const torch::Tensor& value);
  /// The optimizers the run steps (Trainer::optimizers), from start() on (null before).
  const LoopOptimizers* optimizers() const { return optimizers_.get(); }

 private:
  // --- One turn of run(): a micro-batch, and at a window's end the step ----------------------
  bool finished() const;
  /// The next micro-batch of the current epoch (starting one when none is running); nullopt
  /// when the epoch has none left.
  std::optional<Batch> next_batch();
  /// Forward and backward of `batch`, weighted by its share of its window.
  MicroStep forward_backward(const Batch& batch);
  /// train.cuda_graphs, after its eager steps: the whole step on `batch`, replayed.
  MicroStep graph_step(const Batch& batch);
  /// After a window's update: when the step diverged and the run rolls back (`m.rollback`),
  /// restores the last checkpoint (weights, optimizers, schedule, generators, callbacks) and
  /// moves the data on past the batches since, to the batch after this window; scales the lr
  /// by train.divergence.lr_factor. True when it rolled back.
  /// TrainError when there is no checkpoint yet, or past train.divergence.max_rollbacks.
  bool roll_back(const MicroStep& m);
  /// Counts the micro-batch (samples, running sums) and, at a window's end, the step: its
  /// decisions, the schedule, the thread count, on_step_end and the progress bar.
  void advance(const Batch& batch, const MicroStep& m);
  /// At a window's end: logs and validates when their periods say so (and at the run's end).
  void log_and_validate();
  /// Saves when the checkpoint policy asks for it at this point (TrainCheckpoints). At an
  /// epoch's last micro-batch end_epoch() saves instead, after counting the epoch: a save (or a
  /// signal's, a pause's) there holds the epoch as completed, as the logs of that step say.
  void save_if_due() {
    if (!at_epoch_end()) checkpoints_->save_if_due(periods_);
  }
  bool epoch_complete() const;
  /// The epoch's end: counters, the per-epoch schedule, on_epoch_end, epoch-period logs,
  /// validation and saves.
  void end_epoch();
  /// After the loop: the last log events and the final save, the writer drained.
  void finish();

  LogEvent event(MetricMap metrics) const;
  /// The epoch's last micro-batch was read (end_epoch() has not counted the epoch yet).
  bool at_epoch_end() const { return counters_.batch_in_epoch == plan_.batches_per_epoch; }
  /// Completed epochs as events report them: at an epoch's last step, that epoch included.
  int64_t epochs_done() const { return counters_.epoch + (at_epoch_end() ? 1 : 0); }
  bool length_reached() const;
  void log_train();
  void validate();
  /// The run's last log events (train sums left, a validation at the last step), logged
  /// before its last checkpoint so that the checkpoint holds them.
  void finish_logs();
  void close_epoch_batches();
  /// The checkpoint's entries of the run's parts, in the order it saves and restores them
  /// (`trainers`: the optimizer the step runner steps, null with manual optimization).
  void list_checkpoint_entries(torch::optim::Optimizer* trainers);
  /// The per-parameter state of the run's callbacks (ZeRO 3 has it kept by parts).
  std::vector<ParameterState*> parameter_states() const;
  /// cut_'s pipeline: the stage of each parameter, the others' parameters by name.
  void cut_stages();

  const RunSettings& settings_;
  const Config& config_;
  CallbackList& callbacks_;
  RunDecisions& decisions_;
  Precision& precision_;
  TrainModule& module_;
  std::shared_ptr<ProcessGroup> group_;  ///< every process: decisions, barriers, the files
  /// The data-parallel replicas: the data's shard, the gradients, the metrics (group_ unless
  /// distributed.tensor_parallel; null for one replica).
  std::shared_ptr<ProcessGroup> data_group_;
  std::shared_ptr<ProcessGroup> tensor_group_;  ///< null unless distributed.tensor_parallel
  std::shared_ptr<PipelineStage> stage_;        ///< null unless distributed.pipeline_parallel
  std::unique_ptr<ThreadGovernor> threads_;
  TrainState counters_;  ///< the run's counters: this loop is their one writer
  RunPlan plan_;
  Periods periods_;
  LoopData data_;  ///< the loaders, the running epoch, the windows' token counts
  /// From start() on: the sync, sharding and runner, the device's batch, the divergence guard,
  /// the non-finite watch, train.cuda_graphs's graph.
  std::unique_ptr<ProcessStep> step_;
  std::unique_ptr<LoopOptimizers> optimizers_;
  std::unique_ptr<LoopModuleRun> module_run_;  ///< what module_.run() returns during the fit
  TrainLogs logs_;  ///< sums, last metrics, the logger (from open_run_files() on), time
  std::unique_ptr<Profiler> profiler_;  ///< null unless profile.enabled
  /// distributed.tensor_parallel: how the checkpoints' whole tensors are cut (null without).
  std::unique_ptr<TensorCut> cut_;
  std::unique_ptr<TrainCheckpoints> checkpoints_;  ///< from list_checkpoints() on
  bool already_complete_ = false;
};

}  // namespace unitrain
