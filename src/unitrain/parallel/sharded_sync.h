#pragma once
// ShardedSync: the GradientSync of ZeRO stage 3, whose units reduce their own gradients into the
// shards during backward (ShardedUnitRunner): at the window's end only the step's decision is
// left to agree on.
#include <array>
#include <functional>
#include <memory>

#include "unitrain/parallel/gradient_sync.h"
#include "unitrain/parallel/shard_ordered_reduce.h"

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
  StepDecision agreed() const override;
  /// distributed.reproducible's G: the agreed loss summed in shard order (ShardOrderedLoss).
  void order_losses(int micro_shards) { loss_ = std::make_unique<ShardOrderedLoss>(micro_shards); }
  bool orders_losses() const override { return loss_ != nullptr; }
  void share_losses(std::vector<double> shares) override { loss_->share(std::move(shares)); }
  /// distributed.reproducible: the gradients' norm from `norm` (ShardedParameters'
  /// reproducible_norm, a collective), not from each rank's part summed over ranks.
  void measure_norm_with(std::function<double()> norm) { norm_ = std::move(norm); }
  bool measures_norm() const override { return static_cast<bool>(norm_); }
  double norm() override { return norm_(); }

 private:
  std::function<double()> norm_;
  std::unique_ptr<ShardOrderedLoss> loss_;
  std::shared_ptr<ProcessGroup> group_;
  std::array<float, StepDecision::kSlots> mine_{}, agreed_{};
  torch::Tensor nonfinite_flag_;
};

}  // namespace unitrain
