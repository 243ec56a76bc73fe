#pragma once
// Callback: observe and steer a run from outside the loop (Lightning's callbacks, nnScaler's
// trainer hooks). docs/api.md lists the order in which the hooks fire for one step.
#include <exception>
#include <map>
#include <string>

#include "unitrain/core/batch.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/train_state.h"
#include "unitrain/engine/metric_map.h"

namespace unitrain {

class Trainer;
struct MicroStep;
struct FitResult;
class ParameterState;

/// Named entries of callbacks' own state in a checkpoint: name (a file name, without '/') ->
/// bytes.
using CheckpointEntries = std::map<std::string, std::string>;

/// A non-finite loss or gradient norm the step met (on_nonfinite).
struct NonFinite {
  int64_t step = 0;       ///< the optimizer step it belongs to
  std::string what;       ///< "loss", "loss (on another rank)" or "gradient"
  double loss = 0;        ///< the micro-batch's loss
  double grad_norm = -1;  ///< the gradient norm, when it was measured
  bool stops = false;  ///< true: the run stops (on_nonfinite: stop); false: the update is skipped
};

/// Hooks called by the Trainer, in the order callbacks were added. Every hook does nothing by
/// default: override the ones you need. A hook that throws ends the run: the others'
/// on_exception run first, then fit() throws an error naming the callback and the hook.
/// In data-parallel runs every rank runs its callbacks (each on its own shard of the data);
/// checkpoints hold rank 0's callback state.
class Callback {
 public:
  virtual ~Callback() = default;
  /// The callback's name in errors and logs (the registry's type for callbacks built from the
  /// config; the C++ type's name otherwise).
  virtual std::string name() const;

  // --- The run ---------------------------------------------------------------------------
  /// fit() has begun: processes joined, run folder ready, optimizer built; before a resume's
  /// restore. `trainer.state()` is all zeros here.
  virtual void on_fit_start(Trainer& trainer) {}
  /// Training is about to take its first batch (after a resume's restore: the state is the
  /// checkpoint's).
  virtual void on_train_start(Trainer& trainer) {}
  virtual void on_epoch_start(Trainer& trainer) {}
  virtual void on_epoch_end(Trainer& trainer) {}
  /// The loop is over (last logs, validation and the final checkpoint done).
  virtual void on_train_end(Trainer& trainer) {}
  /// fit() returns `result` (results/summary.json written).
  virtual void on_fit_end(Trainer& trainer, const FitResult& result) {}

  // --- One training micro-batch, and at its window's end the optimizer step ---------------
  /// Before the forward pass of `batch` (micro-batch `state().batch_in_epoch` of the epoch).
  virtual void on_train_batch_start(Trainer& trainer, const Batch& batch) {}
  /// `loss` is the micro-batch's loss as backward() receives it (scaled by its share of the
  /// window and of the ranks).
  virtual void on_before_backward(Trainer& trainer, const torch::Tensor& loss) {}
  virtual void on_after_backward(Trainer& trainer) {}
  /// At a window's end, around the wait for gradients reduced across ranks (one process: the
  /// gradients are final already).
  virtual void on_before_gradient_sync(Trainer& trainer) {}
  virtual void on_after_gradient_sync(Trainer& trainer) {}
  /// Around clipping (train.clip_grad_norm). `norm` is the global gradient norm before
  /// clipping; -1 when it was not measured (no clipping and no non-finite check).
  virtual void on_before_clip(Trainer& trainer) {}
  virtual void on_after_clip(Trainer& trainer, double norm) {}
  /// Around the optimizer's update (both fire for a skipped update too: `skipped` says so).
  virtual void on_before_optimizer_step(Trainer& trainer, bool skipped) {}
  virtual void on_after_optimizer_step(Trainer& trainer, bool skipped) {}
  virtual void on_before_zero_grad(Trainer& trainer) {}
  virtual void on_after_zero_grad(Trainer& trainer) {}
  /// After the micro-batch (and at a window's end after its optimizer step), counters updated:
  /// `m` holds the micro-batch's loss and metrics and, at a window's end, the step's decisions
  /// and gradient norm.
  virtual void on_train_batch_end(Trainer& trainer, const Batch& batch, const MicroStep& m) {}
  /// After each optimizer step; `metrics` holds this step's loss.
  virtual void on_step_end(Trainer& trainer, const MetricMap& metrics) {}
  /// A non-finite loss or gradient: the update is skipped, or the run stops after this hook.
  virtual void on_nonfinite(Trainer& trainer, const NonFinite& what) {}

  // --- Logs, validation, test -------------------------------------------------------------
  /// Before a training log event reaches the trackers: add metrics to it or change them.
  virtual void on_before_log(Trainer& trainer, MetricMap& metrics) {}
  /// After each log event of training metrics.
  virtual void on_log(Trainer& trainer, const MetricMap& metrics) {}
  virtual void on_validation_start(Trainer& trainer) {}
  virtual void on_validation_batch_start(Trainer& trainer, const Batch& batch) {}
  virtual void on_validation_batch_end(Trainer& trainer, const Batch& batch,
                                       const StepOutput& outputs) {}
  /// After each validation pass with its reduced metrics (`val/loss`, `val/acc`, ...).
  virtual void on_validation_end(Trainer& trainer, const MetricMap& metrics) {}
  virtual void on_test_start(Trainer& trainer) {}
  virtual void on_test_batch_start(Trainer& trainer, const Batch& batch) {}
  virtual void on_test_batch_end(Trainer& trainer, const Batch& batch, const StepOutput& outputs) {}
  virtual void on_test_end(Trainer& trainer, const MetricMap& metrics) {}

  // --- Checkpoints and failures -----------------------------------------------------------
  /// While a checkpoint is written (rank 0): add named entries of this callback's own state
  /// (any bytes; a name is a file name in the checkpoint folder, without '/').
  virtual void on_save_checkpoint(Trainer& trainer, CheckpointEntries& entries) {}
  /// When a run resumes (every rank): the entries saved by on_save_checkpoint (all callbacks').
  virtual void on_load_checkpoint(Trainer& trainer, const CheckpointEntries& entries) {}
  /// `unitrain eval` / `export` (Trainer::load_validated_weights): a callback that validates
  /// with weights of its own (ema) puts the ones it saved in `entries` into `weights` and
  /// returns true, so that a checkpoint is evaluated and exported as validation saw it.
  virtual bool on_load_validated_weights(Trainer& trainer, torch::nn::Module& weights,
                                         const CheckpointEntries& entries) {
    return false;
  }
  /// fit() is ending with `error` (after training failed, or another callback threw), before
  /// the process exits. Exceptions thrown here are logged and ignored.
  virtual void on_exception(Trainer& trainer, const std::exception& error) {}

  // --- What the callback takes from each step ---------------------------------------------
  /// Whether this callback reads the numbers a step hands its hooks: `metrics` of on_step_end
  /// ("train/loss") and `norm` of on_after_clip. Reading them waits for the device each step,
  /// so a GPU can no longer run ahead of the host. true (the default): they are read. Return
  /// false when the callback takes neither hook or ignores their values: where the loop defers
  /// its reads (train.loss_reads), and no callback returns true, on_step_end then gets an empty
  /// `metrics` and on_after_clip a `norm` of -1 when clipping measured it only on the device.
  /// (on_train_batch_end's MicroStep holds both as device tensors: read them when you need.)
  virtual bool reads_step_values() const { return true; }
  /// Whether this callback takes hooks from inside the optimizer step: on_before_backward,
  /// on_after_backward, the gradient sync's, the clip's, on_before_optimizer_step and the
  /// zero_grad ones. true (the default): it does. train.cuda_graphs replays a captured step
  /// without calling them, so it refuses a callback that returns true. A callback that takes
  /// none of them — or only on_before_optimizer_step to read values the step does not change
  /// (the learning rate) — returns false; under train.cuda_graphs its on_before_optimizer_step
  /// and on_after_optimizer_step then run after the replayed step.
  virtual bool hooks_inside_step() const { return true; }

  /// A callback that keeps state per parameter of the module (the ema callback's average)
  /// returns it, so that distributed.zero: 3 keeps, saves and restores it by parts as the
  /// model's (engine/parameter_state.h). nullptr: none.
  virtual ParameterState* parameter_state() { return nullptr; }
};

}  // namespace unitrain
