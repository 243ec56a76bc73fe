#pragma once
// StepRunner: one micro-batch forward/backward and, at the accumulation boundary, the update:
// sync -> clip -> non-finite check -> optimizer.step() -> zero grads.
#include <torch/optim/optimizer.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unitrain/parallel/gradient_sync.h"
#include "unitrain/core/train_module.h"
#include "unitrain/engine/train_options.h"

namespace unitrain {

/// What one micro-batch did.
struct MicroStepResult {
  double loss = 0;                              ///< the micro-batch's (unscaled) loss
  std::map<std::string, MetricValue> metrics;   ///< its metrics, detached
  bool stepped = false;     ///< an optimizer step (or a skipped one) ended the window
  bool skipped = false;     ///< the window's update was skipped (non-finite, on_nonfinite: skip)
  double grad_norm = -1;    ///< the gradient norm before clipping, when computed
};

/// Runs micro-batches for the Trainer. Each micro-batch's loss is scaled by its share of the
/// window's samples (`weight` = n_i / sum n), so N micro-batches give the same update as one
/// batch of all their samples.
class StepRunner {
 public:
  StepRunner(TrainModule& module, torch::optim::Optimizer& optimizer, const TrainOptions& options,
             GradientSync& sync);

  /// Forward and backward of one micro-batch; when `last_in_window`, the update too.
  /// Throws TrainError on a non-finite loss or gradient with on_nonfinite: stop, naming
  /// `step` (the optimizer step this micro-batch belongs to) and the loss terms.
  MicroStepResult run(const Batch& batch, double weight, bool last_in_window, int64_t step);

  /// Called right before each optimizer step (the checkpoint snapshot fence: an async save
  /// copies parameters and optimizer state while the next forward and backward run).
  void set_before_update(std::function<void()> f) { before_update_ = std::move(f); }
  /// Data-parallel runs: `mine` gives this rank's flags for the window (the first: whether it
  /// saw a non-finite loss, given; the Trainer adds its own), sent with the gradients; `agreed`
  /// receives their sums over ranks after the reduce. A window any rank found bad is skipped
  /// (or stops the run) on every rank.
  void set_shared_flags(std::function<std::vector<float>(bool)> mine,
                        std::function<void(const std::vector<float>&)> agreed) {
    share_flags_ = std::move(mine);
    agreed_flags_ = std::move(agreed);
  }

  /// A non-finite loss was seen earlier in the current window (skip mode); checkpoints save it.
  bool window_bad() const { return window_bad_; }
  void set_window_bad(bool bad) { window_bad_ = bad; }

 private:
  MicroStepResult run_with_closure(const Batch& batch, int64_t step);
  void zero_grads();
  void nonfinite(const std::string& what, int64_t step, const MicroStepResult& r);
  TrainModule& module_;
  torch::optim::Optimizer& optimizer_;
  const TrainOptions& options_;
  GradientSync& sync_;
  std::vector<torch::Tensor> params_;
  bool closure_;
  bool window_bad_ = false;  ///< a non-finite loss was seen earlier in this window (skip mode)
  std::function<void()> before_update_;
  std::function<std::vector<float>(bool)> share_flags_;
  std::function<void(const std::vector<float>&)> agreed_flags_;
};

}  // namespace unitrain
