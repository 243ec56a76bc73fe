#pragma once
// FusedAdam, FusedAdamW: LibTorch's Adam and AdamW, stepping float32 CPU parameters in one pass
// and GPU parameters through LibTorch 2.x's fused multi-tensor kernel.
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <string>
#include <vector>

#include "unitrain/optim/optimizer.h"

namespace unitrain {

/// torch::optim::Adam whose step updates each contiguous float32 CPU parameter in one pass
/// over its memory — gradient, both moments and the parameter read once and written once, in
/// chunks on the intra-op threads — instead of LibTorch's eight tensor operations with two
/// temporaries per parameter. Same algorithm, options and state (AdamParamState: checkpoints and
/// PyTorch's layout unchanged, a resume may switch between the two). Results equal LibTorch's
/// to float rounding (its vectorised kernels fuse some multiply-adds; this one rounds every
/// operation) and do not depend on the number of threads. On a GPU with LibTorch 2.x, every
/// parameter on one device with gradients and moments of its dtype, the step is LibTorch's fused
/// kernel (at::_fused_adam_, what PyTorch's `Adam(fused=True)` runs: a few launches for all the
/// parameters instead of several per parameter), with the same state. Otherwise (amsgrad, mixed
/// devices, LibTorch 1.x on a GPU) the whole step is LibTorch's.
class FusedAdam : public torch::optim::Adam {
 public:
  using Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

/// torch::optim::AdamW (decoupled weight decay) fused the same way.
class FusedAdamW : public torch::optim::AdamW {
 public:
  using AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

/// The step of an Adam or AdamW (LibTorch's, or FusedAdam(W)) as device work alone, for a step
/// that train.cuda_graphs captures: the step count and each group's learning rate live in
/// device tensors that prepare() sets before each replay, so nothing a replay runs was fixed
/// when it was captured. Through LibTorch's fused kernel in its form that reads the learning
/// rate from a float32 tensor (2.4 and later): the update equals the kernel's own with the
/// learning rate rounded to float32. The state stays LibTorch's (AdamParamState: checkpoints
/// as ever): prepare() counts the step on the host too.
class GraphedAdam : public CapturedStep {
 public:
  /// Of `optimizer` once every parameter it trains has its state (after a first step). Throws
  /// ConfigError naming why the kernel cannot step it (not Adam or AdamW, amsgrad, LibTorch
  /// before 2.4, parameters not of one device and dtype, or not contiguous, unequal step counts).
  explicit GraphedAdam(torch::optim::Optimizer& optimizer);
  /// Why GraphedAdam cannot step `optimizer`, judged by its type and options alone (before it
  /// has a state); "" when it can.
  static std::string refusal(const torch::optim::Optimizer& optimizer);
  /// Whether every parameter `optimizer` trains has its state (after its first step).
  static bool has_state(const torch::optim::Optimizer& optimizer);
  /// Before each run of step() (outside a capture): each state's step count goes up by one on
  /// the host and the device's count and learning rates take their values (no host wait).
  void prepare() override;
  /// The update (the kernel launches) from the parameters' current gradients.
  void step() override;

 private:
  torch::optim::Optimizer& optimizer_;
  bool decoupled_ = false;
  torch::Tensor step_;             ///< the shared step count, float32 on the device
  std::vector<torch::Tensor> lr_;  ///< each group's learning rate, float32 on the device
};

/// Adam's and AdamW's StepCapture (GraphedAdam), declared for torch::optim::Adam and AdamW and
/// their subclasses (FusedAdam, FusedAdamW) from the start, as LBFGS's closure is.
StepCapture adam_step_capture();

}  // namespace unitrain
