#pragma once
// FusedAdam, FusedAdamW: LibTorch's Adam and AdamW, stepping float32 CPU parameters in one pass.
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

namespace unitrain {

/// torch::optim::Adam whose step updates each contiguous float32 CPU parameter in one pass
/// over its memory — gradient, both moments and the parameter read once and written once, in
/// chunks on the intra-op threads — instead of LibTorch's eight tensor operations with two
/// temporaries per parameter. Same algorithm, options and state (AdamParamState: checkpoints and
/// PyTorch's layout unchanged, a resume may switch between the two). Results equal LibTorch's
/// to float rounding (its vectorised kernels fuse some multiply-adds; this one rounds every
/// operation) and do not depend on the number of threads. When any parameter is not float32 on
/// the CPU (or amsgrad is on), the whole step is LibTorch's.
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
