#pragma once
// Metric values and the functions that compute them.
#include <torch/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "unitrain/core/metric_value.h"
#include "unitrain/core/registry.h"

namespace unitrain {

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_metrics();

/// A metric on a prediction and a target (both batched).
using MetricFn = std::function<MetricValue(const torch::Tensor& pred, const torch::Tensor& target)>;

/// The metric registry: each metric declares, where it registers, whether higher is better
/// (torchmetrics' `higher_is_better`). A plugin registers one the same way as the built-ins:
///   metric_registry().add("wer", "word error rate", MetricDirection::LowerIsBetter, Schema(),
///       [](const Config&) { return MetricFn(&word_error_rate); });
/// A metric added without a direction (the plain Registry::add) can be logged but not monitored
/// with `mode: auto`: checkpoint.best and early_stopping then need an explicit `mode`.
class MetricRegistry : public Registry<MetricFn> {
 public:
  MetricRegistry() : Registry<MetricFn>("metric") {}
  using Registry<MetricFn>::add;
  /// Registers `name` with its direction, then as Registry::add(name, help, rest...) does.
  template <typename... Rest>
  void add(const std::string& name, const std::string& help, MetricDirection direction,
           Rest&&... rest) {
    Registry<MetricFn>::add(name, help, std::forward<Rest>(rest)...);
    directions_[name] = direction;
  }
  /// The direction metric type `name` declared; nullopt when it declared none (or is unknown).
  std::optional<MetricDirection> direction(const std::string& name) const;

 private:
  std::map<std::string, MetricDirection> directions_;
};

/// Registered metrics (`objective.metrics[].type`).
MetricRegistry& metric_registry();

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
