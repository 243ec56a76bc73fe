#pragma once
// ModelGroupSync: the gradient sync of a process that computes the model with others — a
// tensor group (distributed.tensor_parallel) or a pipeline's stages (distributed.
// pipeline_parallel): the data-parallel sync of its replicas inside, then what the group must
// agree on — the step's decision, and the gradients' norm, of which each process holds a part
// (the part its layers cut, or its stage's parameters).
#include <memory>
#include <unordered_set>
#include <vector>

#include "unitrain/parallel/gradient_sync.h"

namespace unitrain {

class ProcessGroup;

class ModelGroupSync : public GradientSync {
 public:
  /// `inner`: the replicas' sync (NoGradientSync for one replica), or a group's inside this
  /// one (a stage's tensor group); `cut`: the parameters whose gradients are this process's
  /// part (tp::splits_of), the others being whole and equal on every process of `group`.
  ModelGroupSync(std::unique_ptr<GradientSync> inner, std::shared_ptr<ProcessGroup> group,
                 std::vector<torch::Tensor> cut);
  /// A pipeline's stages: every gradient this process holds is its own part of the model (an
  /// inner sync that measures the norm gives its square).
  ModelGroupSync(std::unique_ptr<GradientSync> inner, std::shared_ptr<ProcessGroup> group);

  /// A parameter two processes of the group hold (a pipeline's head tied to the embeddings):
  /// its gradients summed over `pair` in finish(), then counted in norm() where `counted_here`.
  void add_shared(const torch::Tensor& param, std::shared_ptr<ProcessGroup> pair,
                  bool counted_here);
  /// norm() leaves `param` out: another process of an outer group counts it.
  void count_elsewhere(const torch::Tensor& param) {
    counted_elsewhere_.insert(param.unsafeGetTensorImpl());
  }

  /// norm() is the inner sync's, which measures the whole model's already (distributed.
  /// reproducible_chunks: ChunkedNorm).
  void take_norm_from_inner() { inner_norm_is_whole_ = true; }

  void before_backward(bool will_step) override { inner_->before_backward(will_step); }
  void after_backward() override { inner_->after_backward(); }
  void finish(const std::vector<torch::Tensor>& params) override;
  bool keeps_gradients() const override { return inner_->keeps_gradients(); }
  /// An overflow found by one process skips every process's step.
  bool gradients_partitioned() const override { return true; }
  double sum_across_ranks(double local) override;
  /// The norm over the whole model: each cut gradient's square summed over the group, the whole
  /// ones counted once (an inner group's norm: its square summed over this group; ZeRO 2's
  /// replicas, each holding the gradients it owns: each square summed over them first).
  bool measures_norm() const override { return true; }
  double norm() override;
  bool reduces_in_backward() const override { return inner_->reduces_in_backward(); }
  bool shares_decisions() const override { return true; }
  void share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device = {}) override;
  void agree() override;
  StepDecision agreed() const override { return agreed_; }
  /// The replicas' losses in shard order (distributed.reproducible): the same on every part.
  bool orders_losses() const override { return inner_->orders_losses(); }
  void share_losses(std::vector<double> shares) override {
    inner_->share_losses(std::move(shares));
  }

 private:
  /// The replicas' decision, then the largest of each slot over the group (each process of it
  /// holds its replica's, and they agree on each flag once any holds it).
  void join_decisions();

  std::unique_ptr<GradientSync> inner_;
  std::shared_ptr<ProcessGroup> group_;
  std::unordered_set<const void*> cut_;  ///< the cut parameters' TensorImpls
  bool all_parts_ = false;               ///< every parameter is a part (pipeline stages)
  bool inner_norm_is_whole_ = false;
  struct Shared {
    torch::Tensor param;
    std::shared_ptr<ProcessGroup> pair;
  };
  std::vector<Shared> shared_;
  std::unordered_set<const void*> counted_elsewhere_;  ///< shared, norm()'s on the other side
  std::vector<torch::Tensor> params_;  ///< finish()'s: the gradients norm() measures
  StepDecision agreed_;
};

}  // namespace unitrain
