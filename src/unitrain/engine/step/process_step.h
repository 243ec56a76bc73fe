#pragma once
// ProcessStep: the step as the run's processes take it together — their gradient sync, ZeRO's
// sharding and the step runner around them, the micro-batch on the module's device, the
// divergence guard, train.cuda_graphs's replays — built once a fit's optimizer is known.
#include <torch/optim/optimizer.h>

#include <memory>

#include "unitrain/engine/step/divergence_guard.h"
#include "unitrain/engine/step/step_runner.h"

namespace unitrain {

class PipelineStage;
class PipelineStep;
class ProcessGroup;
class ShardedParameters;
class StepGraph;
struct RunPlan;
struct RunSettings;

/// The run's parts a ProcessStep serves.
struct StepParts {
  const RunSettings& settings;
  std::shared_ptr<ProcessGroup> group;  ///< null for one process
  TrainModule& module;
  Precision& precision;
  CallbackList& callbacks;
  Profiler* profiler = nullptr;
  torch::Device device = torch::kCPU;  ///< where the module is (train.device)
  /// distributed.tensor_parallel's group of this process (null without): `group` is then the
  /// data-parallel replicas' (null for one replica).
  std::shared_ptr<ProcessGroup> tensor_group = nullptr;
  /// distributed.pipeline_parallel's stage of this process (null without): the module's units
  /// it runs; `group` is the data-parallel replicas' of the stage.
  std::shared_ptr<PipelineStage> stage = nullptr;
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

  /// train.cuda_graphs: the steps after the first eager ones are captured once and replayed
  /// (replay()). ConfigError naming why when the run cannot be captured (`plan`'s processes,
  /// accumulation, short batches; `hooking`: a callback that hooks inside the step).
  void capture_steps(const RunPlan& plan, const Callback* hooking);
  /// train.cuda_graphs's graph (null without).
  StepGraph* graph() const { return graph_.get(); }
  /// Whether the next step is replayed (a graph past its eager steps).
  bool replays() const;

  /// Forward and backward of `batch` (runner().forward_backward) on the module's device: copied
  /// there (kept until the next one: L-BFGS's update re-evaluates it), and at a window's start
  /// (`window_start`) with distributed.broadcast_buffers, rank 0's buffers to every rank first.
  MicroStep forward_backward(const Batch& batch, double weight, bool window_start, bool window_end,
                             StepDecision mine, int64_t step);
  /// A replayed step on `batch` (capture_steps).
  MicroStep replay(const Batch& batch, StepDecision mine, int64_t step);
  /// At a window's end: gradient sync, clip, `before_update` (an async save's copies fenced),
  /// the update — counted as one of a graph's eager steps unless the run rolls back
  /// (`m.rollback`) — each phase marked in `position`.
  void end_window(MicroStep& m, int64_t step, RunPosition& position,
                  const std::function<void()>& before_update);

  StepRunner& runner() { return *runner_; }
  GradientSync& sync() { return *sync_; }
  /// The step's non-finite watch: every observation of the run settles it first.
  NonfiniteWatch& nonfinite() { return runner_->nonfinite(); }
  /// train.divergence: spikes' moving mean, rollbacks and the lr scale they leave.
  DivergenceGuard& divergence() { return divergence_; }
  const DivergenceGuard& divergence() const { return divergence_; }
  const torch::Device& device() const { return device_; }
  /// ZeRO 1's and 2's sharding of the optimizer's state with several ranks (null otherwise).
  OptimizerSharding* sharding() const { return sharding_.get(); }
  /// ZeRO 3's parameters with several ranks (null otherwise).
  ShardedParameters* sharded_parameters() const { return sharded_params_.get(); }
  bool sharded() const { return sharding_ != nullptr || sharded_params_ != nullptr; }
  /// distributed.pipeline_parallel's share of the step (null without): evaluation runs through
  /// it too.
  PipelineStep* pipeline() const { return pipeline_.get(); }

 private:
  std::unique_ptr<GradientSync> sync_;
  std::shared_ptr<ShardedParameters> sharded_params_;
  std::unique_ptr<OptimizerSharding> sharding_;
  std::unique_ptr<PipelineStep> pipeline_;
  std::unique_ptr<StepRunner> runner_;  ///< holds the sync and the sharding: goes first
  const StepParts parts_;
  const torch::Device device_;
  DivergenceGuard divergence_;
  std::unique_ptr<StepGraph> graph_;  ///< train.cuda_graphs's (else null)
  bool broadcast_buffers_ = false;    ///< rank 0's buffers to every rank at each window's start
  Batch device_batch_;                ///< the micro-batch copied to the device (not on the CPU)
};

}  // namespace unitrain
