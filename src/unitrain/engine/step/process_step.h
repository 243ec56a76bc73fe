#pragma once
// ProcessStep: the step as the run's processes take it together — their gradient sync, ZeRO's
// sharding and the step runner around them — built once a fit's optimizer is known.
#include <torch/optim/optimizer.h>

#include <memory>

#include "unitrain/engine/step/step_runner.h"

namespace unitrain {

class ProcessGroup;
class ShardedParameters;
struct RunSettings;

/// The run's parts a ProcessStep serves.
struct StepParts {
  const RunSettings& settings;
  std::shared_ptr<ProcessGroup> group;  ///< null for one process
  TrainModule& module;
  Precision& precision;
  CallbackList& callbacks;
  Profiler* profiler = nullptr;
  bool cuda = false;  ///< the module is on a GPU (ZeRO 3 prefetches its units' parameters)
};

/// One fit's step for the run's processes, built in this order: the gradient sync (one
/// process: none; data parallel: DataParallelSync, whose buckets ZeRO 2 reduces to their
/// owners; ZeRO 3: ShardedSync, each unit its own), ZeRO 3's cut of the module into this
/// rank's shards (before bf16-true's masters are made for what the optimizer steps), the
/// StepRunner, then ZeRO 1's and 2's sharding of the optimizer's state (after the runner:
/// bf16-true's precision has put the masters into the optimizer's groups).
/// `trainers` null: manual optimization — nothing is sharded and the module's optimizers zero
/// their gradients themselves. Refusals (ZeRO 3 of a model without units) come from the
/// constructor, before anything is written.
class ProcessStep {
 public:
  ProcessStep(const StepParts& parts, torch::optim::Optimizer* trainers);
  ~ProcessStep();
  ProcessStep(const ProcessStep&) = delete;
  ProcessStep& operator=(const ProcessStep&) = delete;

  StepRunner& runner() { return *runner_; }
  GradientSync& sync() { return *sync_; }
  /// ZeRO 1's and 2's sharding of the optimizer's state with several ranks (null otherwise).
  OptimizerSharding* sharding() const { return sharding_.get(); }
  /// ZeRO 3's parameters with several ranks (null otherwise).
  ShardedParameters* sharded_parameters() const { return sharded_params_.get(); }
  bool sharded() const { return sharding_ != nullptr || sharded_params_ != nullptr; }

 private:
  std::unique_ptr<GradientSync> sync_;
  std::shared_ptr<ShardedParameters> sharded_params_;
  std::unique_ptr<OptimizerSharding> sharding_;
  std::unique_ptr<StepRunner> runner_;  ///< holds the sync and the sharding: goes first
};

}  // namespace unitrain
