#pragma once
// GradNorm: the gradient norm of each optimizer step, in the training logs.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

struct GradNormOptions {
  bool per_parameter = false;  ///< also each parameter tensor's norm
  static void declare(Options<GradNormOptions>& o);
};

/// Logs `train/grad_norm`: the global L2 norm of the gradients after they are reduced across
/// ranks and before clipping (the norm train.clip_grad_norm compares), the mean over the steps
/// since the last log; a skipped update (a non-finite norm, an fp16 overflow) is not counted.
/// With `per_parameter`, `train/grad_norm/<parameter>` for each parameter tensor (e.g.
/// `fc1.weight`) too. The norms are summed on the gradients' device and read at log time: no
/// step waits for them.
class GradNorm : public Callback {
 public:
  explicit GradNorm(GradNormOptions options) : options_(options) {}
  std::string name() const override { return "grad_norm"; }
  bool reads_step_values() const override { return false; }
  void on_before_clip(Trainer& trainer) override;
  void on_after_clip(Trainer& trainer, double norm) override;
  void on_after_optimizer_step(Trainer& trainer, bool skipped) override;

 private:
  GradNormOptions options_;
  /// This step's norms before clipping, logged once its update is known not to be skipped.
  std::vector<std::pair<std::string, torch::Tensor>> pending_;
};

/// Registers callback `grad_norm` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_grad_norm_callback();

}  // namespace unitrain
