#pragma once
// FusedAdam, FusedAdamW: LibTorch's Adam and AdamW, stepping float32 CPU parameters in one pass
// and GPU parameters through LibTorch 2.x's fused multi-tensor kernel.
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

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

}  // namespace unitrain
