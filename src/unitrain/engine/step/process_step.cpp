#include "unitrain/engine/step/process_step.h"

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
  if (!group) {
    sync_ = std::make_unique<NoGradientSync>();
  } else if (distributed.zero == 3 && !manual) {  // each unit reduces its own gradients
    sync_ = std::make_unique<ShardedSync>(group);
  } else {
    DataParallelOptions dp = distributed.data_parallel_options();
    for (const auto& p : parts.module.weights().named_parameters()) dp.names.push_back(p.key());
    dp.gradient_views = !manual;  // the module's optimizers zero their gradients themselves
    if (distributed.zero == 2) {  // (its precisions are checked at fit()'s start)
      gradient_owners_ = bucket_owners(parts.module.weights().parameters(), group->world_size());
      dp.owners = gradient_owners_;
    }
    sync_ = std::make_unique<DataParallelSync>(group, parts.module.weights().parameters(), dp);
  }
  if (group && !manual && distributed.zero == 3) {
    sharded_params_ = shard_module(group, parts.module, *trainers, parts.precision.masters(),
                                   distributed.unit_min_params, distributed.prefetches(parts.cuda));
  }
  runner_ = std::make_unique<StepRunner>(parts.module, trainers, parts.settings.train, *sync_,
                                         parts.callbacks, parts.precision, parts.profiler);
  if (group && !manual && distributed.zero == 1) {
    sharding_ = std::make_unique<OptimizerSharding>(group, *trainers);
  } else if (group && !manual && distributed.zero == 2) {  // the buckets' owners
    sharding_ = std::make_unique<OptimizerSharding>(
        group, *trainers, parts.module.weights().parameters(), gradient_owners_);
  }
  if (sharding_) runner_->shard(sharding_.get());
}

ProcessStep::~ProcessStep() = default;

}  // namespace unitrain
