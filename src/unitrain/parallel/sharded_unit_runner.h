#pragma once
// ShardedUnitRunner: runs a module's units with ZeRO stage 3's parameters — gathered just before
// a unit's forward and again before its backward, released after each; its gradients reduced
// into the shards as soon as its backward is done.
#include <memory>
#include <vector>

#include "unitrain/core/unit_runner.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {

/// In grad mode, each unit is a node of the autograd graph: forward gathers the unit, runs `fn`
/// recording its own graph, and releases the unit; that node's backward gathers it again,
/// backpropagates through the recorded graph (the parameters' gradients accumulate whole, as
/// usual), reduces them into the shards (ShardedParameters::reduce_gradients; the loss is
/// already scaled by 1 / ranks: the sum is the average) and releases the unit. Without grad
/// (validation) a unit is gathered, run and released.
/// With `group_of` (the module's unit -> a unit of `params`: consecutive small units joined,
/// distributed.unit_min_params), a joined unit is gathered when its first member runs and
/// released after its last member's forward; in backward it is gathered until every member that
/// ran forward has backpropagated, then its gradients are reduced at once and it is released.
/// Every rank must run the same units in the same order, in forward and in backward.
class ShardedUnitRunner : public UnitRunner {
 public:
  /// `group_of` empty: each module unit is its own. `prefetch`: a unit's forward launches the
  /// next unit's gather, its backward the gather of the unit before (when that one awaits its
  /// backward), so that the transfer overlaps the computation (at most two units gathered).
  explicit ShardedUnitRunner(std::shared_ptr<ShardedParameters> params,
                             std::vector<int> group_of = {}, bool prefetch = false);

  std::vector<torch::Tensor> run(size_t unit, const TensorsFn& fn,
                                 const std::vector<torch::Tensor>& inputs) override;

  ShardedParameters& params() { return *params_; }

  /// Per joined unit: its members' forwards whose backward has not run yet.
  struct Pending;

 private:
  std::shared_ptr<ShardedParameters> params_;
  std::vector<int> group_of_;
  std::vector<bool> last_member_;  ///< per module unit: the last of its joined unit
  std::shared_ptr<Pending> pending_;
};

}  // namespace unitrain
