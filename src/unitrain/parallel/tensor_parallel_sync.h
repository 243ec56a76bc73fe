#pragma once
// TensorParallelSync: the gradient sync of a process in a tensor group (distributed.
// tensor_parallel): the data-parallel sync of its replicas inside, then what the tensor group
// must agree on — the step's decision, and the gradients' norm, of which each process holds the
// part its layers cut.
#include <memory>
#include <unordered_set>
#include <vector>

#include "unitrain/parallel/gradient_sync.h"

namespace unitrain {

class ProcessGroup;

class TensorParallelSync : public GradientSync {
 public:
  /// `inner`: the replicas' sync (NoGradientSync for one replica); `cut`: the parameters whose
  /// gradients are this process's part (tp::splits_of), the others being whole and equal on
  /// every process of `group`.
  TensorParallelSync(std::unique_ptr<GradientSync> inner, std::shared_ptr<ProcessGroup> group,
                     std::vector<torch::Tensor> cut);

  void before_backward(bool will_step) override { inner_->before_backward(will_step); }
  void after_backward() override { inner_->after_backward(); }
  void finish(const std::vector<torch::Tensor>& params) override;
  bool keeps_gradients() const override { return inner_->keeps_gradients(); }
  /// An overflow found by one process skips every process's step.
  bool gradients_partitioned() const override { return true; }
  double sum_across_ranks(double local) override;
  /// The norm over the whole model: each cut gradient's square summed over the group, the whole
  /// ones counted once.
  bool measures_norm() const override { return true; }
  double norm() override;
  bool reduces_in_backward() const override { return inner_->reduces_in_backward(); }
  bool shares_decisions() const override { return true; }
  void share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device = {}) override;
  void agree() override;
  StepDecision agreed() const override { return agreed_; }

 private:
  /// The replicas' decision, then the largest of each slot over the group (each process of it
  /// holds its replica's, and they agree on each flag once any holds it).
  void join_decisions();

  std::unique_ptr<GradientSync> inner_;
  std::shared_ptr<ProcessGroup> group_;
  std::unordered_set<const void*> cut_;  ///< the cut parameters' TensorImpls
  std::vector<torch::Tensor> params_;    ///< finish()'s: the gradients norm() measures
  StepDecision agreed_;
};

}  // namespace unitrain
