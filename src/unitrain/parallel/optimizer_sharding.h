#pragma once
// OptimizerSharding: ZeRO stage 1 over a ProcessGroup — each rank keeps the optimizer's state for
// its own partition of the parameters, steps those, and sends them to every other rank.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace unitrain {

class ProcessGroup;

/// The owner rank of each parameter, given their element counts in order: each goes to the
/// rank with the fewest elements so far (ties: the lowest rank). A function of `sizes` and
/// `world` alone, so every rank computes the same partition.
std::vector<int> partition_by_size(const std::vector<int64_t>& sizes, int world);

/// ZeRO stage 1 (optimizer-state sharding; fairscale's OSS, DeepSpeed's stage 1) for an
/// optimizer whose gradients are already reduced on every rank.
/// - Each parameter the optimizer trains (over its groups, in order: the "global index" its
///   checkpoint state is saved under) has one owner rank, partition_by_size of element counts.
/// - step() runs the optimizer with only this rank's parameters' gradients visible, so it
///   updates those and creates state for those alone (every LibTorch optimizer skips a
///   parameter without a gradient; a custom optimizer must too), then sends the updated
///   parameters from their owners to every rank (ProcessGroup::from_owners): on Gloo one
///   broadcast per parameter, in place (no buffer beside the parameters), all launched before
///   any is waited for; on NCCL one all-gather per dtype.
/// - drop_foreign_state() forgets state held for parameters this rank does not own (Adagrad
///   makes state for every parameter when built; a whole checkpoint loaded into a sharded run).
/// Requires: the same optimizer (groups, parameter shapes and dtypes) on every rank, and
/// step() reached by every rank (it is a collective). Gradients are untouched: clipping and
/// the loss scaler see every gradient, as without sharding.
class OptimizerSharding {
 public:
  OptimizerSharding(std::shared_ptr<ProcessGroup> group, torch::optim::Optimizer& optimizer);
  /// With the owners given for the model's parameters (ZeRO stage 2: those of the gradient
  /// buckets; under tensor parallelism, those the whole tensors' sizes draw). Owner -1: no
  /// rank steps it here (a parameter of another pipeline stage). TrainError when the optimizer
  /// trains a tensor not among `params`; `zero` the stage errors name.
  OptimizerSharding(std::shared_ptr<ProcessGroup> group, torch::optim::Optimizer& optimizer,
                    const std::vector<torch::Tensor>& params, const std::vector<int>& owners,
                    int zero = 2);
  ~OptimizerSharding();

  void step();
  void drop_foreign_state();

  /// The owner of each parameter, by global index.
  const std::vector<int>& owners() const { return owners_; }
  int rank() const;

 private:
  std::shared_ptr<ProcessGroup> group_;
  torch::optim::Optimizer& optimizer_;
  std::vector<torch::Tensor> params_;  ///< over the optimizer's groups, in order
  std::vector<int> owners_;
};

}  // namespace unitrain
