#include "unitrain/metrics/metric_accumulator.h"

#include <cmath>

#include "unitrain/core/error.h"

namespace unitrain {

void MetricAccumulator::add(const std::map<std::string, MetricValue>& values, int64_t batch_size) {
  for (const auto& [name, value] : values) add(name, value, batch_size);
}

void MetricAccumulator::add(const std::string& name, const MetricValue& value, int64_t batch_size) {
  UT_CHECK_TRAIN(value.value.defined() && value.value.numel() == 1, "metric '", name,
                 "' must be a scalar tensor, got ",
                 value.value.defined() ? std::to_string(value.value.numel()) + " values"
                                       : std::string("no value"));
  double weight = value.weight < 0 ? static_cast<double>(batch_size) : value.weight;
  auto [it, inserted] = sums_.try_emplace(name);
  Sum& sum = it->second;
  if (inserted) {
    sum.exp_of_mean = value.exp_of_mean;
  } else {
    UT_CHECK_TRAIN(sum.exp_of_mean == value.exp_of_mean, "metric '", name,
                   "' changed exp_of_mean between batches");
  }
  if (weight == 0) return;  // nothing counted in this batch (e.g. every token ignored)
  sum.weighted += value.value.item<double>() * weight;
  sum.weight += weight;
}

void MetricAccumulator::add(const std::string& name, double value, double weight) {
  Sum& sum = sums_[name];
  UT_CHECK_TRAIN(!sum.exp_of_mean, "metric '", name, "' changed exp_of_mean between batches");
  if (weight == 0) return;
  sum.weighted += value * weight;
  sum.weight += weight;
}

std::map<std::string, double> MetricAccumulator::result() const {
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums_) {
    if (sum.weight <= 0) continue;  // no items seen: no value rather than 0/0
    double mean = sum.weighted / sum.weight;
    out[name] = sum.exp_of_mean ? std::exp(mean) : mean;
  }
  return out;
}

}  // namespace unitrain
