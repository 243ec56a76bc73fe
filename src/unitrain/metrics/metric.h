#pragma once
// Metric values and the functions that compute them.
#include <torch/types.h>

#include <functional>

#include "unitrain/core/metric_value.h"
#include "unitrain/core/registry.h"

namespace unitrain {

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_metrics();

/// A metric on a prediction and a target (both batched).
using MetricFn = std::function<MetricValue(const torch::Tensor& pred, const torch::Tensor& target)>;

/// Registered metrics (`objective.metrics[].type`).
Registry<MetricFn>& metric_registry();

namespace metrics {
// Shapes: class scores [B, C] with class indices [B] (or [B, 1]), or [B, T, C] with [B, T] for
// tokens (the class dimension is last). Targets equal to -100 (PyTorch's ignore_index) are not
// counted; `weight` is the number of counted items. A prediction whose shape cannot fit the
// target throws PredictionTargetError (metrics/shape_check.h), a ConfigError.

/// Share of items whose argmax over the last dim equals the integer target. With one logit per
/// item ([B] or [B, 1] vs 0/1 targets [B]) a logit > 0 predicts class 1.
MetricValue accuracy(const torch::Tensor& logits, const torch::Tensor& target);
/// Share of items whose target is among the k largest logits; ConfigError when k > classes.
MetricValue top_k_accuracy(const torch::Tensor& logits, const torch::Tensor& target, int64_t k);
/// Mean squared / absolute error; pred and target of one shape ([B, 1] vs [B] accepted, nothing
/// else broadcast); weight = rows.
MetricValue mse(const torch::Tensor& pred, const torch::Tensor& target);
MetricValue mae(const torch::Tensor& pred, const torch::Tensor& target);
/// Perplexity: `value` is the mean token cross entropy (logits [..., V], target [...] of class
/// indices), weight = counted tokens and exp_of_mean = true, so MetricAccumulator reports
/// exp(mean NLL over the whole pass).
MetricValue perplexity(const torch::Tensor& logits, const torch::Tensor& target);
}  // namespace metrics

}  // namespace unitrain
