#pragma once
// LossScaler: dynamic loss scaling for fp16 training, with PyTorch's GradScaler semantics.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "unitrain/precision/loss_scaler_options.h"

namespace unitrain {

/// Multiplies the loss by a scale so that small fp16 gradients do not flush to zero, and
/// divides the gradients by it before clipping and the optimizer step. As PyTorch's
/// torch.cuda.amp.GradScaler: a step whose gradients hold an inf or NaN is skipped and the
/// scale multiplied by backoff_factor; after growth_interval steps in a row without one, the
/// scale is multiplied by growth_factor (unless that overflows float32). The scale is a float32
/// value; the arithmetic is PyTorch's kernel's (`_amp_update_scale_`), so the scales follow the
/// same sequence as Python's.
class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options = {});

  /// `loss` times the scale.
  torch::Tensor scale_loss(const torch::Tensor& loss) const;
  /// Divides the gradients of `params` by the scale (multiplies by float32(1 / scale), as
  /// PyTorch does) and says whether any of them held an inf or NaN before.
  bool unscale(const std::vector<torch::Tensor>& params) const;
  /// The step is over: back off after an overflow (`found_inf`), else count towards growth.
  void update(bool found_inf);

  float scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }

  /// The state as JSON with the keys of GradScaler.state_dict() (scale, growth_factor,
  /// backoff_factor, growth_interval, _growth_tracker).
  std::string state_json() const;
  /// Takes scale and growth tracker from state_json() text (the factors and interval stay
  /// the configured ones). TrainError naming `what` when the text is not such a state.
  void load_state_json(const std::string& text, const std::string& what);

 private:
  LossScalerOptions options_;
  float scale_;
  int64_t growth_tracker_ = 0;
};

}  // namespace unitrain
