#pragma once
// ReproducibleSync: distributed.reproducible's GradientSync — each micro-shard's gradient made
// from no gradient, the step's G shards summed in shard order whatever the world size
// (ShardOrderedReduce), then the sum whole on every rank for clipping and the optimizer.
#include <torch/types.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "unitrain/parallel/gradient_sync.h"
#include "unitrain/parallel/shard_ordered_reduce.h"

namespace unitrain {

class ProcessGroup;

/// The step of a reproducible run, per rank:
/// - before each micro-shard's backward, the parameters' gradients are set to none, so each
///   shard's gradient is what its backward alone makes;
/// - after it, they are laid end to end (in parameter order; one without a gradient as zeros)
///   into a flat buffer and handed to ShardOrderedReduce (one all-to-all per micro-step), then
///   freed; the exchange runs while the next micro-shard computes (its adds wait for the next
///   after_backward(), or finish());
/// - at the window's end (finish), every rank's owned slice of the sum is gathered into the
///   flat buffer, and the parameters' gradients become views of it: the same bits on every rank
///   and every world size, so clipping's norm, the loss scaler's check and the optimizer (whole,
///   or ZeRO 1's partition) compute alike. A parameter no shard gave a gradient gets none, as in
///   one process. The step's decision travels in one small all-reduce with those flags.
/// Only parameters that required a gradient when it was built are laid out; the others'
/// gradients are left to autograd. Every rank runs every backward (reduces_in_backward).
class ReproducibleSync : public GradientSync {
 public:
  /// `group` null: one process (the same arithmetic, nothing exchanged). ConfigError when the
  /// parameters that train have more than one dtype, or the world size does not divide
  /// `micro_shards`.
  ReproducibleSync(std::shared_ptr<ProcessGroup> group, const std::vector<torch::Tensor>& params,
                   int micro_shards);
  ~ReproducibleSync() override;

  void before_backward(bool will_step) override;
  void after_backward() override;
  void finish(const std::vector<torch::Tensor>& params) override;
  bool reduces_in_backward() const override { return true; }
  bool shares_decisions() const override { return true; }
  void share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device = {}) override;
  void agree() override;
  StepDecision agreed() const override {
    return loss_.applied_to(StepDecision::decode(agreed_.data()));
  }
  bool orders_losses() const override { return true; }
  void share_losses(std::vector<double> shares) override { loss_.share(std::move(shares)); }

  bool measures_norm() const override { return true; }
  /// ParameterBlockSquares' norm of the gradients finish() gave (no collective: they are whole),
  /// or `measure`'s when given (a chunked model's: ChunkedNorm).
  double norm() override;
  void measure_norm_with(std::function<double()> measure) { measure_ = std::move(measure); }

  const MicroShardLayout& layout() const { return reduce_.layout(); }
  /// Bytes this rank sends per micro-step (the all-to-all) and per step's end (the gather).
  int64_t bytes_sent_per_micro_step() const { return reduce_.bytes_sent_per_micro_step(); }

 private:
  /// The decision (with the device's non-finite flag) and the used flags summed over ranks.
  void agree_with_used();

  std::shared_ptr<ProcessGroup> group_;  ///< null: one process
  std::vector<torch::Tensor> params_;    ///< those laid out, in order
  std::vector<int64_t> offsets_;         ///< each one's start in the flat buffer
  ShardOrderedReduce reduce_;
  torch::Tensor flat_;       ///< padded_numel(): a shard's gradient, then the step's sum
  std::vector<float> used_;  ///< per parameter: a shard of this rank's window gave it one
  std::array<float, StepDecision::kSlots> mine_{};
  std::array<float, StepDecision::kSlots> agreed_{};
  std::vector<bool> used_by_any_;  ///< after finish: per parameter
  torch::Tensor nonfinite_flag_;
  ShardOrderedLoss loss_;
  ParameterBlockSquares squares_;  ///< norm()'s blocks of params_
  std::function<double()> measure_;
};

}  // namespace unitrain
