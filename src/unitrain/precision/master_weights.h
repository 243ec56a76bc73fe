#pragma once
// MasterWeights: float32 master copies of a module whose parameters are bfloat16 (bf16-true).
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <string>
#include <utility>
#include <vector>

namespace unitrain {

/// bf16-true training: the module computes in `low` (bfloat16) while the optimizer steps
/// float32 masters, so that updates smaller than a bfloat16 step of the weight are not lost
/// to rounding (the weight moves once the updates add up). Each step: gradients_to_masters()
/// (the module's low gradients, reduced across ranks, widened into the masters' gradients),
/// the optimizer's step on the masters, masters_to_model() (rounded into the module).
/// Checkpoints hold the masters (float32 model.pt; buffers widened too), so a resume is exact.
class MasterWeights {
 public:
  using Named = std::vector<std::pair<std::string, torch::Tensor>>;

  /// Copies the module's floating parameters to float32 masters, then casts its floating
  /// parameters and buffers to `low` (before any backward: gradient hooks attach after).
  MasterWeights(torch::nn::Module& module, c10::ScalarType low);

  /// Puts the masters in place of the module's parameters in `optimizer`'s groups, before its
  /// first step (its state is then float32). ConfigError when a group holds a tensor that is
  /// not a parameter of the module.
  void adopt(torch::optim::Optimizer& optimizer);
  /// The module's gradients, widened into the masters' (a master whose parameter has no
  /// gradient gets none: the optimizer leaves it).
  void gradients_to_masters();
  /// The masters rounded into the module's parameters.
  void masters_to_model();
  /// Frees the masters' gradients (after the optimizer step): between steps bf16-true then
  /// holds 2 + 2 + 4 bytes per parameter (model, its gradient, master) besides the optimizer's
  /// state, as float32 training holds 4 + 4.
  void release_master_gradients();

  /// The module's parameters by state_dict() name with the masters' values, then its buffers
  /// widened to float32 (copies): what model.pt holds.
  Named parameters() const;
  Named buffers() const;
  /// Sets masters, module parameters and buffers from float32 `state` (names as parameters()
  /// and buffers() give them; load_module_state has checked names and shapes).
  void load(const Named& state);

  /// distributed.zero: 3: from now on the masters are those of `shards` (this rank's parts of
  /// the module's parameters, in `low`: what the optimizer steps until adopt()), and `masters`
  /// their float32 values, one per shard (ShardedParameters::cut of parameters(); a shard that
  /// is not floating has an undefined one). The whole masters are freed; parameters(),
  /// buffers() and load() are not used from then on: the sharded checkpoint entry saves and
  /// restores shard_masters().
  void shard(const std::vector<torch::Tensor>& shards, const std::vector<torch::Tensor>& masters);
  bool sharded() const { return sharded_; }
  /// After shard(): each shard's float32 master, in the shards' order (undefined where none).
  const std::vector<torch::Tensor>& shard_masters() const { return shard_masters_; }

 private:
  torch::nn::Module& module_;
  c10::ScalarType low_;
  std::vector<torch::Tensor> params_;   ///< the module's floating parameters
  std::vector<torch::Tensor> masters_;  ///< their float32 masters, same order
  std::vector<int> master_index_;       ///< per module parameter: its master, or -1
  bool sharded_ = false;
  std::vector<torch::Tensor> shard_masters_;  ///< after shard(): per shard, its master
};

}  // namespace unitrain
