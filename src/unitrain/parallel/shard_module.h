#pragma once
// shard_module: ZeRO stage 3 set up on a module and its optimizer.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace unitrain {

class MasterWeights;
class ProcessGroup;
class ShardedParameters;
class TrainModule;

/// Shards `module`'s parameters by its units (TrainModule::units(); ConfigError naming
/// distributed.zero when it has none, or when a parameter the optimizer trains is in no unit),
/// one flat per unit and optimizer group; points the optimizer's groups at this rank's shards
/// (the groups keep their options); and runs the module's units through a ShardedUnitRunner.
/// The optimizer must have no state yet (Adagrad's initial state is made again for the shards).
/// Consecutive units holding fewer than `unit_min_params` parameters are joined into one
/// (join_small_units): gathered and reduced together. `prefetch`: ShardedUnitRunner's.
/// With bf16-true's `masters` (the module already in bfloat16), the masters become the shards'
/// (cut from their whole float32 values, which are freed), before the optimizer adopts them.
/// `micro_shards` > 0: distributed.reproducible's G (ShardedParameters' layout and sums in shard
/// order; its norm numbers the model's parameters that train in the model's order).
/// Every rank must call it with the same module (after broadcast_module) and optimizer.
std::shared_ptr<ShardedParameters> shard_module(std::shared_ptr<ProcessGroup> group,
                                                TrainModule& module,
                                                torch::optim::Optimizer& optimizer,
                                                MasterWeights* masters = nullptr,
                                                int64_t unit_min_params = 0, bool prefetch = false,
                                                int micro_shards = 0);

/// The module whole again after training with ZeRO 3 (what comes after fit: a test split, an
/// export): its unit runner removed, the parts' gradients dropped and the memory they and the
/// optimizer's state (which the caller frees first) held given back to the kernel, then every
/// unit gathered into parameters of their own (ShardedParameters::unshard, a collective).
void unshard_module(TrainModule& module, ShardedParameters& sharded);

/// Per unit of `units` (in the order forward runs them), the joined unit it belongs to: units
/// are joined in order until the joined one holds at least `min_params` parameters; the last
/// units, if together still fewer, join the one before. 0 keeps each unit its own.
std::vector<int> join_small_units(const std::vector<std::vector<torch::Tensor>>& units,
                                  int64_t min_params);

}  // namespace unitrain
