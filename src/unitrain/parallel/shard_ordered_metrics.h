#pragma once
// ShardOrderedMetrics: distributed.reproducible's losses and metrics — each batch's values kept
// as this rank computed them, then added in the global order of the batches, so that the sums
// are the same doubles on every rank and every world size.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "unitrain/core/metric_value.h"

namespace unitrain {

class MetricAccumulator;
class ProcessGroup;

/// The batches of one rank, in the order it ran them. Rank q's k-th batch is the global batch
/// k x W + q (micro-shards of training, batches of a validation pass read by whole batches).
/// fold() adds every rank's batches into a MetricAccumulator in global order — per name, value
/// x weight then weight, the first batch's added to what it held — and forgets them.
class ShardOrderedMetrics {
 public:
  /// One batch's values; a weight < 0 stands for `batch_size`.
  void add(const std::map<std::string, MetricValue>& values, int64_t batch_size);
  bool empty() const { return batches_.empty(); }
  /// Forgets the batches not folded yet (a rollback's restore).
  void clear() { batches_.clear(); }
  /// Every rank's batches into `into`, in global order; the same on every rank. A collective
  /// (`group` null: this process's alone); every rank calls it at the same point, with any
  /// number of batches (a validation shard may have one fewer). Reads the values (one wait for
  /// the device).
  void fold(ProcessGroup* group, MetricAccumulator& into);

 private:
  struct Value {
    torch::Tensor value;  ///< a scalar
    double weight;
    bool exp_of_mean;
  };
  std::vector<std::map<std::string, Value>> batches_;
};

}  // namespace unitrain
