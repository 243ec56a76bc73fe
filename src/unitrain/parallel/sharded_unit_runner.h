#pragma once
// ShardedUnitRunner: runs a module's units with ZeRO stage 3's parameters — gathered just before
// a unit's forward and again before its backward, released after each; its gradients reduced
// into the shards as soon as its backward is done.
#include <memory>

#include "unitrain/core/unit_runner.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {

/// In grad mode, each unit is a node of the autograd graph: forward gathers the unit, runs `fn`
/// recording its own graph, and releases the unit; that node's backward gathers it again,
/// backpropagates through the recorded graph (the parameters' gradients accumulate whole, as
/// usual), reduces them into the shards (ShardedParameters::reduce_gradients; the loss is
/// already scaled by 1 / ranks: the sum is the average) and releases the unit. Without grad
/// (validation) a unit is gathered, run and released.
/// Every rank must run the same units in the same order, in forward and in backward.
class ShardedUnitRunner : public UnitRunner {
 public:
  explicit ShardedUnitRunner(std::shared_ptr<ShardedParameters> params);

  std::vector<torch::Tensor> run(size_t unit, const TensorsFn& fn,
                                 const std::vector<torch::Tensor>& inputs) override;

  ShardedParameters& params() { return *params_; }

 private:
  std::shared_ptr<ShardedParameters> params_;
};

}  // namespace unitrain
