#include "unitrain/metrics/metric_accumulator.h"

#include <torch/torch.h>

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
  sum.weight += weight;
  if (reads_ == Reads::Auto && value.value.is_cpu()) {
    sum.weighted += value.value.item<double>() * weight;
    return;
  }
  torch::NoGradGuard no_grad;
  torch::Tensor term = value.value.detach().reshape({}).to(torch::kFloat64) * weight;
  // The sum continues from what was already read (restored from a checkpoint), in the order the
  // host would have added: the same bits as reading each value when added.
  torch::Tensor& pending = pending_[name];
  pending = pending.defined() ? pending + term : term + sum.weighted;
}

void MetricAccumulator::settle() const {
  if (pending_.empty()) return;
  std::vector<torch::Tensor> values;
  for (const auto& [name, t] : pending_) values.push_back(t.to(torch::kCPU));
  torch::Tensor host = torch::stack(values);  // the copies above: the one wait for the device
  const double* v = host.data_ptr<double>();
  size_t i = 0;
  for (const auto& [name, t] : pending_) sums_[name].weighted = v[i++];
  pending_.clear();
}

void MetricAccumulator::add(const std::string& name, double value, double weight) {
  Sum& sum = sums_[name];
  UT_CHECK_TRAIN(!sum.exp_of_mean, "metric '", name, "' changed exp_of_mean between batches");
  if (weight == 0) return;
  sum.weight += weight;
  auto pending = pending_.find(name);
  if (pending != pending_.end()) {  // continue the sum on the device, unread
    pending->second = pending->second + value * weight;
  } else {
    sum.weighted += value * weight;
  }
}

std::map<std::string, double> MetricAccumulator::result() const {
  settle();
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums_) {
    if (sum.weight <= 0) continue;  // no items seen: no value rather than 0/0
    double mean = sum.weighted / sum.weight;
    out[name] = sum.exp_of_mean ? std::exp(mean) : mean;
  }
  return out;
}

}  // namespace unitrain
