#pragma once
// PrecisionMode: the number formats a run trains in (`train.precision`).
#include <string>

namespace unitrain {

/// Lightning's names. fp32: everything in float32. bf16-mixed / fp16-mixed: parameters,
/// gradients and optimizer state stay float32; forward and loss run under LibTorch's autocast
/// (matrix products and convolutions in the 16-bit type). fp16-mixed also scales the loss
/// (LossScaler). bf16-true: the model's parameters and buffers are bfloat16 (half the memory),
/// the optimizer steps float32 master copies (MasterWeights); its forward runs under autocast
/// too, for float32 losses and norms.
enum class PrecisionMode { Fp32, Bf16Mixed, Fp16Mixed, Bf16True };

/// The config name of `mode` ("bf16-mixed").
std::string precision_name(PrecisionMode mode);

}  // namespace unitrain
