#include "unitrain/engine/step/process_step.h"

#include <vector>

#include "unitrain/engine/config/run_settings.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/shard_module.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/parallel/sharded_sync.h"

namespace unitrain {

ProcessStep::ProcessStep(const StepParts& parts, torch::optim::Optimizer* trainers) {
  const DistributedOptions& distributed = parts.settings.distributed;
  const bool manual = trainers == nullptr;
  const auto& group = parts.group;
  const bool shards = group && !manual;  // (the module's own optimizers are never sharded)
  std::vector<int> gradient_owners;      // ZeRO 2: each parameter's bucket owner, model order
  if (!group) {
    sync_ = std::make_unique<NoGradientSync>();
  } else if (distributed.zero == 3 && !manual) {  // each unit reduces its own gradients
    sync_ = std::make_unique<ShardedSync>(group);
  } else {
    DataParallelOptions dp = distributed.data_parallel_options();
    for (const auto& p : parts.module.weights().named_parameters()) dp.names.push_back(p.key());
    dp.gradient_views = !manual;  // the module's optimizers zero their gradients themselves
    if (distributed.zero == 2) {  // (its precisions are checked at fit()'s start)
      gradient_owners = bucket_owners(parts.module.weights().parameters(), group->world_size());
      dp.owners = gradient_owners;
    }
    sync_ = std::make_unique<DataParallelSync>(group, parts.module.weights().parameters(), dp);
  }
  if (shards && distributed.zero == 3) {
    sharded_params_ = shard_module(group, parts.module, *trainers, parts.precision.masters(),
                                   distributed.unit_min_params, distributed.prefetches(parts.cuda));
  }
  runner_ = std::make_unique<StepRunner>(parts.module, trainers, parts.settings.train, *sync_,
                                         parts.callbacks, parts.precision, parts.profiler);
  if (shards && distributed.zero == 1) {
    sharding_ = std::make_unique<OptimizerSharding>(group, *trainers);
  } else if (shards && distributed.zero == 2) {  // the buckets' owners
    sharding_ = std::make_unique<OptimizerSharding>(
        group, *trainers, parts.module.weights().parameters(), gradient_owners);
  }
  if (sharding_) runner_->shard(sharding_.get());
}

ProcessStep::~ProcessStep() = default;

}  // namespace unitrain
