#pragma once
// Losses and regularizers of the config-driven objective.
#include <torch/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unitrain/core/registry.h"

namespace unitrain {

/// A loss on a prediction and its target, reduced to the mean over the batch (for sequence
/// outputs: over all tokens). Throws ConfigError naming the loss and both shapes when they
/// cannot fit.
using LossFn = std::function<torch::Tensor(const torch::Tensor& pred, const torch::Tensor& target)>;

/// Registered losses (`objective.losses[].type`): cross_entropy, nll, mse, l1, smooth_l1,
/// bce_with_logits.
Registry<LossFn>& loss_registry();

/// A penalty on a set of tensors (the trainable parameters, or one prediction).
using RegularizerFn = std::function<torch::Tensor(const std::vector<torch::Tensor>& tensors)>;

/// Registered regularizers (`objective.regularizers[].type`): l1, l2.
Registry<RegularizerFn>& regularizer_registry();

}  // namespace unitrain
