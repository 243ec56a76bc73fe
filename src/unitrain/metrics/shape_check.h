#pragma once
// The shape rules shared by losses and metrics, and the error they throw when a prediction
// cannot fit its target.
#include <torch/types.h>

#include <string>

#include "unitrain/core/error.h"

namespace unitrain {

/// A prediction and target that a loss or metric cannot use together (shapes that do not fit,
/// a class index out of range, ...). A ConfigError whose what() reads
/// `loss 'mse': prediction shape [32, 1] does not fit target shape [32, 3]; mse expects ...`;
/// named() gives the same message with the config names of the two tensors, as
/// `loss 'mse' (prediction 'out' vs target 'y'): ...`.
class PredictionTargetError : public ConfigError {
 public:
  /// `kind` is "loss" or "metric", `type` the registered name, `detail` the problem.
  PredictionTargetError(std::string kind, std::string type, std::string detail);
  std::string named(const std::string& prediction, const std::string& target) const;

 private:
  std::string kind_, type_, detail_;
};

/// "[32, 10]"
std::string shape_str(at::IntArrayRef sizes);

/// Throws PredictionTargetError
/// "prediction shape P does not fit target shape T; <type> <expects>" (`expects` starts with
/// a verb: "expects logits [B, C] ...").
[[noreturn]] void throw_shape_mismatch(const std::string& kind, const std::string& type,
                                       const torch::Tensor& pred, const torch::Tensor& target,
                                       const std::string& expects);

/// Class-index targets for class scores `pred` [..., C]: returns `target` as int64 with shape
/// pred.sizes()[:-1]. Accepts target [...] or [..., 1] (squeezed); floating targets must hold
/// whole numbers. Anything else throws PredictionTargetError with `expects` appended.
torch::Tensor class_index_target(const torch::Tensor& pred, const torch::Tensor& target,
                                 const std::string& kind, const std::string& type,
                                 const std::string& expects);

/// Element-wise targets: returns `target` with pred's shape and (floating) dtype. The shapes
/// must be equal, or equal once a single trailing dimension of size 1 is dropped from one of
/// them ([B, 1] vs [B]). Nothing is broadcast: PyTorch silently broadcasts mse([B, 1], [B]) to
/// [B, B], a classic bug; here any other difference throws PredictionTargetError.
torch::Tensor elementwise_target(const torch::Tensor& pred, const torch::Tensor& target,
                                 const std::string& kind, const std::string& type,
                                 const std::string& expects);

/// Class index that marks a target to skip (PyTorch's default ignore_index).
constexpr int64_t kIgnoreIndex = -100;

}  // namespace unitrain
