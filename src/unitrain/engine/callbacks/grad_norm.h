#pragma once
// GradNorm: the gradient norm of each optimizer step, in the training logs.
#include <map>
#include <string>

#include "unitrain/core/options.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

struct GradNormOptions {
  bool per_parameter = false;  ///< also each parameter tensor's norm
  static void declare(Options<GradNormOptions>& o);
};

/// Logs `train/grad_norm`: the global L2 norm of the gradients after they are reduced across
/// ranks and before clipping (the norm train.clip_grad_norm compares), the mean over the steps
/// since the last log; a non-finite norm (its update is skipped) is not counted. With `per_parameter`,
/// `train/grad_norm/<parameter>` for each parameter tensor (e.g. `fc1.weight`) too.
class GradNorm : public Callback {
 public:
  explicit GradNorm(GradNormOptions options) : options_(options) {}
  std::string name() const override { return "grad_norm"; }
  void on_before_clip(Trainer& trainer) override;
  void on_after_clip(Trainer& trainer, double norm) override;

 private:
  GradNormOptions options_;
};

/// Registers callback `grad_norm` (its name, help and args) in callback_registry();
/// register_builtin_callbacks() calls it.
void register_grad_norm_callback();

}  // namespace unitrain
