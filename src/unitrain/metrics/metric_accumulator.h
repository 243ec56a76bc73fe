#pragma once
// Accumulates MetricValues over many batches, weighted by sample (or token) counts.
#include <map>
#include <string>

#include "unitrain/metrics/metric.h"

namespace unitrain {

/// Sums value x weight and weight per metric name; result() gives the weighted means (exp'ed
/// where asked). Weighting by items, not batches, makes a pass's value independent of the
/// batch size and of a short last batch.
///
/// Reading a value on a GPU waits for the device. Values on the CPU are read when added (that
/// costs nothing); values elsewhere, or all of them with Reads::Deferred, are summed on their
/// device and read together, once, when result() or sums() needs them.
class MetricAccumulator {
 public:
  enum class Reads { Auto, Deferred };
  explicit MetricAccumulator(Reads reads = Reads::Auto) : reads_(reads) {}

  /// Adds one batch's values; `batch_size` stands in for weights < 0.
  void add(const std::map<std::string, MetricValue>& values, int64_t batch_size);
  void add(const std::string& name, const MetricValue& value, int64_t batch_size);
  /// A value already on the host (the training loss the step read), weighted by `weight`.
  void add(const std::string& name, double value, double weight);
  /// Weighted means; a name whose total weight is 0 (nothing counted) has no entry.
  std::map<std::string, double> result() const;
  /// Raw sums, for reducing across processes: name -> (sum of value*weight, sum of weight).
  struct Sum {
    double weighted = 0;
    double weight = 0;
    bool exp_of_mean = false;
  };
  const std::map<std::string, Sum>& sums() const {
    settle();
    return sums_;
  }
  std::map<std::string, Sum>& sums() {
    settle();
    return sums_;
  }
  bool empty() const { return sums_.empty(); }
  void clear() {
    sums_.clear();
    pending_.clear();
  }

 private:
  /// Folds the values still on their device into sums_ (one host read for all of them).
  void settle() const;
  Reads reads_;
  mutable std::map<std::string, Sum> sums_;
  /// name -> sum of value * weight not yet read, on the values' device (float64).
  mutable std::map<std::string, torch::Tensor> pending_;
};

}  // namespace unitrain
