#pragma once
// PipelineStage: this process's place in a pipeline of stages (distributed.pipeline_parallel):
// which of the module's units (TrainModule::units()) it runs, and the messages it exchanges
// with its neighbours — a micro-batch's activations forward, their gradients back.
#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace unitrain {

class ProcessGroup;

/// The first unit of each of `stages` stages that cut units of `costs` (in forward order) into
/// runs, each at least one unit, whose largest total cost is the least it can be (the earlier
/// cut on a tie). ConfigError naming distributed.pipeline_parallel when there are fewer units
/// than stages.
std::vector<size_t> balanced_stage_starts(const std::vector<double>& costs, int stages);

/// The first unit of each stage from distributed.pipeline_cuts (`cuts`: the first unit of each
/// stage after the first, increasing, inside the `units`); ConfigError naming the key and the
/// value otherwise.
std::vector<size_t> named_stage_starts(const std::vector<int64_t>& cuts, size_t units, int stages);

/// A parameter two stages hold: a unit of stage `owner` lists it, a unit of stage `borrower`
/// uses it too (a head tied to the embeddings). Their gradients are summed over `group` (the two
/// stages) at each step's end, so both take the same step.
struct SharedParameter {
  torch::Tensor param;
  int owner = 0, borrower = 0;
  std::shared_ptr<ProcessGroup> group;
};

/// One stage of a pipeline over `group` (its ranks; the last stage is rank 0, so the process that
/// writes the run's logs holds the loss): units [first, end) of the module. Messages of micro-
/// batch `micro` of a window carry their own tags, so none waits behind another's.
class PipelineStage {
 public:
  PipelineStage(std::shared_ptr<ProcessGroup> group, std::vector<size_t> starts, size_t units);

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == stages_ - 1; }
  size_t first_unit() const { return first_; }
  size_t end_unit() const { return end_; }
  /// The first unit of every stage.
  const std::vector<size_t>& starts() const { return starts_; }
  /// The stage that runs unit `unit`.
  int stage_of(size_t unit) const;
  /// The rank of stage `stage` in the group.
  int rank_of(int stage) const { return stages_ - 1 - stage; }
  ProcessGroup& group() const { return *group_; }
  /// The parameters this stage holds beside another (SharedParameter).
  const std::vector<SharedParameter>& shared() const { return shared_; }
  void add_shared(SharedParameter p) { shared_.push_back(std::move(p)); }
  const std::shared_ptr<ProcessGroup>& group_ptr() const { return group_; }
  /// distributed.zero 1 with replicas of the pipeline: ParallelPlan::partitions (null
  /// otherwise), the processes that write the optimizer state's partitions.
  std::shared_ptr<ProcessGroup> partitions;
  /// model.lora: the frozen base's fingerprint (frozen_fingerprint of its whole tensors),
  /// taken before the other stages' memory was given back; empty without.
  std::string base_fingerprint;

  /// The previous stage's output for `micro` (its shape and dtype travel first), on `device`.
  torch::Tensor receive_activation(int micro, const torch::Device& device);
  /// This stage's output for `micro` to the next stage; launched, not waited for.
  void send_activation(const torch::Tensor& out, int micro);
  /// The gradient of this stage's output `out` for `micro`, from the next stage.
  torch::Tensor receive_gradient(const torch::Tensor& out, int micro);
  /// The gradient of this stage's input for `micro` to the previous stage; launched.
  void send_gradient(const torch::Tensor& grad, int micro);
  /// The random generators' state after this stage's forward of `micro` to the next stage
  /// (distributed.reproducible: the next stage's draws go on from it, as one process's
  /// would); launched.
  void send_draws(const torch::Tensor& state, int micro);
  /// The previous stage's state for `micro` (a byte tensor of `like`'s size).
  torch::Tensor receive_draws(const torch::Tensor& like, int micro);
  /// Waits for every send launched (before the window's update, and before a save).
  void wait_sends();
  /// Seconds spent waiting for the neighbours so far: in receives and in wait_sends.
  double waited_seconds() const { return waited_; }

 private:
  std::shared_ptr<ProcessGroup> group_;
  std::vector<size_t> starts_;
  int stage_, stages_;
  size_t first_, end_;
  std::vector<std::function<void()>> sends_;
  std::vector<SharedParameter> shared_;
  double waited_ = 0;
};

}  // namespace unitrain
