#pragma once
// MetricValue: one batch's value of a metric, as a TrainModule's step returns it.
#include <torch/types.h>

namespace unitrain {

/// Which way a metric improves. Every metric declares it where it registers
/// (metric_registry().add(name, help, direction, ...)); a TrainModule answers it for the names
/// it logs (TrainModule::metric_direction). Nothing guesses it from a name.
enum class MetricDirection { LowerIsBetter, HigherIsBetter };

/// One batch's value of a metric: the mean over `weight` items (samples, or tokens for a
/// language model). Accumulated over a pass as sum(value * weight) / sum(weight), then passed
/// through exp() when `exp_of_mean` (perplexity = exp of the mean token NLL).
/// A plain number is a value too: `out.metrics["acc"] = 0.5;` (a float64 scalar on the CPU).
struct MetricValue {
  MetricValue() = default;
  MetricValue(torch::Tensor v) : value(std::move(v)) {}  // NOLINT: implicit on purpose
  MetricValue(double v) : value(scalar(v)) {}            // NOLINT: implicit on purpose
  MetricValue(torch::Tensor v, double w, bool exp = false)
      : value(std::move(v)), weight(w), exp_of_mean(exp) {}
  MetricValue(double v, double w, bool exp = false)
      : value(scalar(v)), weight(w), exp_of_mean(exp) {}

  torch::Tensor value;  ///< a scalar
  double weight = -1;   ///< items the mean is over; < 0 means the batch size
  bool exp_of_mean = false;

 private:
  static torch::Tensor scalar(double v) { return torch::scalar_tensor(v, torch::kFloat64); }
};

}  // namespace unitrain
