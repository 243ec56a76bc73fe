#pragma once
// Precision: what train.precision changes in a step — autocast, loss scaling, master weights.
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/core/batch.h"
#include "unitrain/precision/autocast_scope.h"
#include "unitrain/precision/loss_scaler.h"
#include "unitrain/precision/master_weights.h"
#include "unitrain/precision/precision_mode.h"

namespace unitrain {

/// The parts of a step that a precision mode changes, for the step runner, the evaluator and
/// checkpoints. In order, per step: forward and loss inside autocast(); backward of
/// scale_loss(loss); after the gradient sync, unscale_and_check() (fp16-mixed: gradients
/// divided by the scale, an overflow skips the step; bf16-true: gradients widened into the
/// masters) before clipping; after the optimizer step, finish_step().
class Precision {
 public:
  /// Sets `module` (the model's weights) up for `mode`: bf16-true casts it to bfloat16 with
  /// float32 masters. ConfigError naming train.precision when the mode cannot run where the
  /// module's parameters are (fp16-mixed needs CUDA: LibTorch 1.13's CPU autocast does
  /// bfloat16 only).
  Precision(PrecisionMode mode, torch::nn::Module& module, const LossScalerOptions& scaler = {});
  /// The ConfigError the constructor would throw for `mode` on `module`.
  static void check(PrecisionMode mode, const torch::nn::Module& module);
  /// The same for `mode` on `device`, before anything is set up (the Trainer checks the run's
  /// train.device before it touches the run folder, and before the module moves there).
  static void check(PrecisionMode mode, c10::DeviceType device);
  /// fp16-mixed's loss scaling without its autocast, on any device: for a model that runs its
  /// own float16 forward, and for tests of the scaling on the CPU.
  static std::unique_ptr<Precision> loss_scaling_only(torch::nn::Module& module,
                                                      const LossScalerOptions& scaler = {});

  PrecisionMode mode() const { return mode_; }
  /// The forward pass's scope: autocast for bf16-mixed, fp16-mixed and bf16-true (whose
  /// bfloat16 model then gets autocast's float32 losses and norms: LibTorch 1.13's CPU has no
  /// bfloat16 kernel for several losses, mse_loss among them), nothing for fp32.
  AutocastScope autocast() const;
  /// bf16-true: the batch with its floating tensors in bfloat16; else the batch unchanged.
  Batch inputs(const Batch& batch) const;
  bool casts_inputs() const { return mode_ == PrecisionMode::Bf16True; }
  /// The loss backward runs on (times the loss scale for fp16-mixed).
  torch::Tensor scale_loss(const torch::Tensor& loss) const;
  /// Before clipping, with the gradients final: true when the step must be skipped (fp16-mixed:
  /// an inf/NaN gradient after scaling, the same on every rank since they were reduced). When
  /// each rank holds only its part of the gradients (distributed.zero: 3), `any_rank` turns this
  /// rank's finding into every rank's (a collective, called on every rank with a loss scaler).
  bool unscale_and_check(const std::vector<torch::Tensor>& params,
                         const std::function<bool(bool)>& any_rank = nullptr);
  /// The optimizer's groups step the masters (bf16-true); call before its first step.
  void adopt(torch::optim::Optimizer& optimizer);
  /// The tensors whose gradients clipping measures: the masters for bf16-true, else `params`.
  std::vector<torch::Tensor> clip_targets(const std::vector<torch::Tensor>& params) const;
  /// After the optimizer step (or its skip): the scale's update, the masters into the model.
  void finish_step(bool skipped);

  /// The loss scaler (fp16-mixed) and master weights (bf16-true), or null.
  LossScaler* scaler() { return scaler_.get(); }
  const LossScaler* scaler() const { return scaler_.get(); }
  MasterWeights* masters() { return masters_.get(); }
  const MasterWeights* masters() const { return masters_.get(); }

 private:
  Precision(PrecisionMode mode, c10::DeviceType device, bool autocast);
  PrecisionMode mode_;
  c10::DeviceType device_;
  bool autocast_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<MasterWeights> masters_;
  std::vector<torch::Tensor> master_list_;  ///< the optimizer's tensors after adopt()
  bool found_inf_ = false;
};

}  // namespace unitrain
