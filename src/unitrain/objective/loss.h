#pragma once
// Losses and regularizers of the config-driven objective.
#include <torch/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unitrain/core/registry.h"

namespace unitrain {

struct VocabSplit;

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_losses();
void register_builtin_regularizers();

/// A loss on a prediction and its target, reduced to the mean over the batch (for sequence
/// outputs: over all tokens). Throws PredictionTargetError (metrics/shape_check.h, a
/// ConfigError) naming the loss and both shapes when they cannot fit.
/// Shapes: cross_entropy / nll take scores [B, C] with class indices [B] (or [B, 1]) or
/// [B, T, C] with [B, T] (class dim last; flattened to tokens; the mean skips ignore_index and
/// is 0, not NaN, when every target is ignored); cross_entropy also takes class probabilities
/// of the logits' shape. mse, l1, smooth_l1 and bce_with_logits are element-wise: equal shapes,
/// or [B, 1] vs [B] (exactly squeezable); nothing is broadcast, unlike PyTorch's silent
/// mse([B, 1], [B]) -> [B, B]. kl_div takes student logits and teacher logits of one shape,
/// [B, C] or [B, T, C] (tokens flattened, every token counted).
using LossFn = std::function<torch::Tensor(const torch::Tensor& pred, const torch::Tensor& target)>;

/// Registered losses (`objective.losses[].type`): cross_entropy, nll, mse, l1, smooth_l1,
/// bce_with_logits, kl_div (Hinton's distillation term with a temperature; its target is
/// usually a prediction of objective.teacher).
Registry<LossFn>& loss_registry();

/// The loss of `section` (a resolved objective.losses entry) on logits whose last dimension is
/// cut over a tensor group (`split`, Model::vocab_split): cross_entropy's mean over counted
/// targets computed from each process's part (parallel/tensor_parallel.h), no process holding
/// the full logits. ConfigError naming the entry's key for any other loss type and for
/// cross_entropy's label_smoothing or class-probability targets.
LossFn vocab_parallel_loss(const Config& section, const VocabSplit& split);

/// A penalty on a set of tensors (the trainable parameters, or one prediction).
using RegularizerFn = std::function<torch::Tensor(const std::vector<torch::Tensor>& tensors)>;

/// Registered regularizers (`objective.regularizers[].type`): l1 = sum |w|, l2 = sum w^2 / 2
/// (the 1/2 ||w||^2 convention: weight * l2 has gradient weight * w, so the weight equals an
/// SGD weight_decay). Zero for an empty set.
Registry<RegularizerFn>& regularizer_registry();

}  // namespace unitrain
