#pragma once
// shard_module: ZeRO stage 3 set up on a module and its optimizer.
#include <memory>

namespace torch::optim {
class Optimizer;
}

namespace unitrain {

class ProcessGroup;
class ShardedParameters;
class TrainModule;

/// Shards `module`'s parameters by its units (TrainModule::units(); ConfigError naming
/// distributed.zero when it has none, or when a parameter the optimizer trains is in no unit),
/// one flat per unit and optimizer group; points the optimizer's groups at this rank's shards
/// (the groups keep their options); and runs the module's units through a ShardedUnitRunner.
/// The optimizer must have no state yet (Adagrad's initial state is made again for the shards).
/// Every rank must call it with the same module (after broadcast_module) and optimizer.
std::shared_ptr<ShardedParameters> shard_module(std::shared_ptr<ProcessGroup> group,
                                                TrainModule& module,
                                                torch::optim::Optimizer& optimizer);

}  // namespace unitrain
