#pragma once
// StepRunner: the phases of one optimizer step — forward and backward of each micro-batch, then
// at the window's end gradient sync, clipping and the optimizer's update.
#include <torch/optim/optimizer.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unitrain/core/batch.h"
#include "unitrain/core/metric_value.h"
#include "unitrain/core/train_module.h"
#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/engine/step/divergence_guard.h"
#include "unitrain/engine/step/nonfinite_watch.h"
#include "unitrain/parallel/gradient_sync.h"
#include "unitrain/parallel/optimizer_sharding.h"
#include "unitrain/parallel/step_decision.h"
#include "unitrain/precision/precision.h"
#include "unitrain/profile/profiler.h"

namespace unitrain {

class PipelineStep;
class RunPosition;

/// What one micro-batch did; the fields after `window_end` are filled at a window's end.
struct MicroStep {
  /// The micro-batch's (unscaled) loss: a detached scalar on the model's device. Reading it
  /// (loss_value()) waits for the device; the loop reads it only at log time when
  /// train.loss_reads defers reads.
  torch::Tensor loss;
  std::map<std::string, MetricValue> metrics;  ///< its metrics, detached, on the device
  bool window_end = false;  ///< the micro-batch ends its accumulation window: a step follows
  StepDecision decision;    ///< what every rank agreed on at the window's end
  bool skipped = false;     ///< the update was skipped (non-finite, on_nonfinite: skip; or
                            ///< a loss-scale overflow under fp16-mixed)
  /// The gradient norm before clipping on the host: -1 when not measured, or measured only on
  /// the device (`norm`; clipping reads it only where a decision or a callback needs it).
  double grad_norm = -1;
  /// The gradient norm before clipping as a scalar on the gradients' device; undefined when
  /// not measured (no clipping, on_nonfinite: stop).
  torch::Tensor norm;
  /// Why the step diverged, when the run rolls back to its last checkpoint now (a non-finite
  /// loss or gradient with train.on_nonfinite: rollback, a spike with train.divergence.action:
  /// rollback); "" otherwise. The update was skipped.
  std::string rollback;

  /// The loss on the host (NaN when no loss was computed: L-BFGS's closure had not run).
  double loss_value() const;
};

/// Runs the phases of a step for the Trainer, in this order per window: forward_backward()
/// for each micro-batch, then sync_gradients(), clip_gradients(), update(). Each micro-batch's
/// loss is scaled by its share of the window's samples (`weight` = n_i / sum n, and 1/ranks
/// across ranks), so N micro-batches give the update of one batch of all their samples.
/// Optimizers that re-evaluate the loss (L-BFGS) step on every micro-batch: forward_backward()
/// only holds the batch, and update() runs the optimizer with a closure over it.
/// Each phase runs the callbacks' hooks around it (before/after backward, gradient sync, clip,
/// optimizer step, zero_grad; on_nonfinite). `precision` shapes the phases (autocast around
/// the forward, loss scaling, master weights); the runner hands it the optimizer (adopt()).
/// Non-finite losses: read and checked on every micro-batch (train.loss_reads: immediate), or
/// (deferred: no host sync per micro-batch on a GPU) or-ed into a flag on the device that the
/// window's decision carries; the host learns of it once per step, in sync_gradients(). Then a
/// bad window's later backwards run anyway (their gradients are dropped with the update), and
/// on_nonfinite: stop stops at the window's end instead of at the bad micro-batch — or, in a
/// single process without spike detection, not even there: the first bad step and its loss
/// stay on the device until nonfinite().settle() (every log event, validation pass and save
/// goes through it, and the run's end), so a step makes no host read at all; so does
/// clipping's norm there, which stays on the device too (a non-finite one is kept like a
/// non-finite loss).
class StepRunner {
 public:
  /// `optimizer` null: manual optimization — training_step runs backward and steps the
  /// module's own optimizers (TrainModule::configure_optimizers); the runner then only checks
  /// the loss and agrees on the step's decisions, around the same callbacks.
  StepRunner(TrainModule& module, torch::optim::Optimizer* optimizer, const TrainOptions& options,
             GradientSync& sync, CallbackList& hooks, Precision& precision,
             Profiler* profiler = nullptr);

  /// Forward, and backward unless the window already saw a non-finite loss. At the window's
  /// end `mine` (this rank's stop and signal) goes with the gradients to the other ranks.
  /// Throws TrainError on a non-finite loss with on_nonfinite: stop in a single process,
  /// naming `step` (the optimizer step this micro-batch belongs to) and the loss terms.
  MicroStep forward_backward(const Batch& batch, double weight, bool window_end, StepDecision mine,
                             int64_t step);
  /// Waits until every gradient is final (reduced across ranks) and sets `m.decision` to what
  /// every rank agreed; a non-finite loss on any rank skips the update (or stops the run).
  void sync_gradients(MicroStep& m, int64_t step);
  /// Unscales the gradients (fp16-mixed: an overflow skips the step) and clips the global
  /// gradient norm to train.clip_grad_norm (or measures it, to skip a non-finite one, under
  /// on_nonfinite: skip).
  void clip_gradients(MicroStep& m, int64_t step);
  /// The optimizer's step, unless the update is skipped; then gradients are zeroed.
  /// (precision's finish_step between: the loss scale's update, master weights into the model.)
  void update(MicroStep& m, int64_t step);

  /// The optimizer it steps (null: manual optimization).
  torch::optim::Optimizer* optimizer() const { return optimizer_; }
  /// Backward marks its phase in `position` (null: nowhere).
  void follow(RunPosition* position) { position_ = position; }

  /// ZeRO stage 1: the optimizer steps through `sharding` (this rank's partition, then the
  /// parameters from their owners); null: the optimizer steps every parameter.
  void shard(OptimizerSharding* sharding) { sharding_ = sharding; }
  /// distributed.pipeline_parallel: each micro-batch runs this process's stage through
  /// `pipeline` (1F1B), the window's backwards done by its end; null: the whole module.
  void pipe(PipelineStep* pipeline) { pipeline_ = pipeline; }
  /// train.divergence: each window's mean loss is agreed with the step's decision and compared
  /// with `guard`'s moving mean (a spike stops, skips or rolls back); steps that train join it.
  /// ConfigError for spike detection where the loss is only known inside the optimizer's step
  /// (L-BFGS) or after the module's own update (manual optimization) with action: skip.
  void watch(DivergenceGuard* guard);
  /// A rollback: the open window's gradients and flags are dropped (the checkpoint restores
  /// its own).
  void drop_window();

  /// Losses, metrics and non-finite checks are read at log time and at the window's end
  /// (train.loss_reads), not on every micro-batch.
  bool defers_reads() const { return defer_reads_; }
  /// Whether a non-finite loss that stops the run (on_nonfinite: stop) is read only when the
  /// run observes its numbers (nonfinite().settle(): at log events, validation, checkpoint
  /// saves and the end) rather than at each window's end: deferred reads in a single process,
  /// without spike detection. Steps then run without any wait for the device.
  bool checks_nonfinite_late() const;
  /// The step's non-finite watch: the window's flag (its checkpoint entry) and the late check
  /// every observation of the run settles first.
  NonfiniteWatch& nonfinite() { return watch_; }

  // --- train.cuda_graphs (StepGraph) ------------------------------------------------------
  /// update() steps the optimizer through `step` instead of its own step() (null: its own):
  /// StepGraph's eager steps update as its replays do.
  void step_optimizer_with(std::function<void()> step) { optimizer_step_ = std::move(step); }
  /// The whole step on `batch` with no hook and no host read: training_step under the
  /// precision's autocast, backward, clipping to train.clip_grad_norm on the device, then
  /// `optimizer_step`; gradients are left for the next step to overwrite. What StepGraph
  /// captures (one process, one micro-batch a step). `m.loss`, `m.metrics` and `m.norm` are the
  /// step's own tensors: a capture's outputs, which each replay overwrites.
  MicroStep step_body(const Batch& batch, const std::function<void()>& optimizer_step,
                      int64_t step);
  /// After step_body's work ran (or its replay): the step's decision, the non-finite checks
  /// (immediate reads: now; deferred: kept for check_nonfinite()), then on_before_optimizer_step
  /// and on_after_optimizer_step.
  void step_body_done(MicroStep& m, StepDecision mine, int64_t step);

 private:
  void update_with_closure(MicroStep& m, int64_t step);
  /// forward_backward of a pipeline stage: the micro-batch's forward, then the backwards 1F1B
  /// has due; at the window's end the decisions shared.
  MicroStep staged_forward_backward(const Batch& batch, double weight, bool window_end,
                                    StepDecision mine, int64_t step);
  /// training_step under the precision's autocast, on its inputs; checks the loss is a scalar.
  /// What it throws is rethrown naming it and `step` (module_error.h).
  StepOutput training_step(const Batch& batch, int64_t step);
  void zero_grads();
  /// zero_grads() without its callbacks: views zeroed in place, other gradients freed.
  void clear_gradients();
  /// clip_gradients when each rank holds only its partition's gradients: the global norm
  /// (returned) from one all-reduce of squared norms, each rank clipping its part.
  double clip_partitioned();
  /// clip_gradients when the sync measures the norm (distributed.reproducible): its norm
  /// (returned), every gradient scaled by clip_grad_norm / (norm + 1e-6) when that is below 1.
  double clip_measured();
  void backward(const torch::Tensor& loss, bool window_end, int64_t step);
  /// loss.backward(), what it throws rethrown naming the step (no hooks, no sync).
  void loss_backward(const torch::Tensor& loss, int64_t step);
  void finish_sync();
  /// on_nonfinite, then (`stops`) the TrainError that ends the run.
  void nonfinite(const std::string& what, int64_t step, const MicroStep& m, bool stops);
  [[noreturn]] void throw_nonfinite(const std::string& what, int64_t step, const MicroStep& m);
  /// A non-finite loss or gradient under on_nonfinite (callbacks told; stop throws, rollback
  /// marks `m`).
  void on_nonfinite(const std::string& what, int64_t step, MicroStep& m);
  /// The agreed window loss against the moving mean: a spike stops, skips or marks a rollback.
  void check_spike(MicroStep& m, int64_t step);
  TrainModule& module_;
  torch::optim::Optimizer* optimizer_;  ///< null: the module steps its own
  const TrainOptions& options_;
  GradientSync& sync_;
  CallbackList& hooks_;
  Precision& precision_;
  Profiler* profiler_;  ///< null: not profiling
  OptimizerSharding* sharding_ = nullptr;
  PipelineStep* pipeline_ = nullptr;  ///< distributed.pipeline_parallel's stage (else null)
  RunPosition* position_ = nullptr;
  std::vector<torch::Tensor> params_;       ///< the model's tensors the optimizer trains
  std::vector<torch::Tensor> clip_params_;  ///< those clipping measures (bf16-true: masters)
  std::function<bool(bool)> any_rank_;      ///< partitioned gradients: any rank's overflow is all's
  bool closure_;
  const Batch* closure_batch_ = nullptr;  ///< the micro-batch update() re-evaluates
  std::function<void()> optimizer_step_;  ///< step_optimizer_with()'s (null: the optimizer's)
  bool defer_reads_;                      ///< train.loss_reads resolved for the model's device
  NonfiniteWatch watch_;  ///< the window's non-finite flags, the late check's first bad step
  DivergenceGuard* guard_ = nullptr;  ///< train.divergence's moving mean and rollbacks
  torch::Tensor window_loss_;  ///< spikes watched: sum of the window's losses x their weights
  /// Spikes watched under distributed.reproducible: each micro-shard's loss x its weight.
  std::vector<torch::Tensor> window_shares_;
  bool leaves_checked_ = false;  ///< the first training_step's graph was looked at
};

}  // namespace unitrain
