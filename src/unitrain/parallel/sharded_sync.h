#pragma once
// ShardedSync: the GradientSync of ZeRO stage 3, whose units reduce their own gradients into the
// shards during backward (ShardedUnitRunner): at the window's end only the step's decision is
// left to agree on.
#include <array>
#include <memory>

#include "unitrain/parallel/gradient_sync.h"

namespace unitrain {

class ProcessGroup;

class ShardedSync : public GradientSync {
 public:
  explicit ShardedSync(std::shared_ptr<ProcessGroup> group);

  /// Agrees on the window's decision (one small all-reduce); the gradients are in the shards.
  void finish(const std::vector<torch::Tensor>& params) override { agree(); }
  bool gradients_partitioned() const override { return true; }
  double sum_across_ranks(double local) override;
  bool reduces_in_backward() const override { return true; }
  bool shares_decisions() const override { return true; }
  void share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device = {}) override;
  void agree() override;
  StepDecision agreed() const override { return StepDecision::decode(agreed_.data()); }

 private:
  std::shared_ptr<ProcessGroup> group_;
  std::array<float, StepDecision::kSlots> mine_{}, agreed_{};
  torch::Tensor nonfinite_flag_;
};

}  // namespace unitrain
