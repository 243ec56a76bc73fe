#pragma once
// GradientSync: the seam where data-parallel training reduces gradients across processes.
#include <torch/types.h>

#include <vector>

#include "unitrain/parallel/step_decision.h"

namespace unitrain {

/// Called by the step runner around backward. A single process uses NoGradientSync; a
/// data-parallel implementation launches bucketed all-reduces from gradient hooks and waits
/// for them in finish().
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// Before the backward of a micro-batch; `will_step` is false on accumulation micro-steps
  /// (no reduce needed then).
  virtual void before_backward(bool will_step) {}
  /// After the backward of a micro-batch (and its on_after_backward callbacks).
  virtual void after_backward() {}
  /// At the accumulation boundary, before clipping and the optimizer step: every gradient
  /// must be final (reduced and averaged) when this returns.
  virtual void finish(const std::vector<torch::Tensor>& params) {}
  /// True when gradients must stay allocated between steps (zeroed in place): data-parallel
  /// gradients are views of the reduce buckets. Otherwise the step runner frees them after
  /// each update and the next backward writes fresh ones (no zeroing and no accumulation pass).
  virtual bool keeps_gradients() const { return false; }
  /// True when after finish() each rank holds only its own partition's gradients (ZeRO stage
  /// 2; the others are undefined): a norm over all gradients is then the sum over ranks of
  /// each rank's part, through sum_across_ranks (one small all-reduce).
  virtual bool gradients_partitioned() const { return false; }
  virtual double sum_across_ranks(double local) { return local; }
  /// distributed.reproducible: the gradients' L2 norm comes from norm() (after finish(), a
  /// collective where the gradients are partitioned), the same double on every world size;
  /// clipping scales every gradient by its coefficient.
  virtual bool measures_norm() const { return false; }
  virtual double norm() { return 0; }
  /// distributed.reproducible: the agreed decision's loss (train.divergence) is the sum in
  /// shard order of the window's shares each rank gives share_losses() (each micro-shard's loss
  /// x its weight, in its order) before finish(), not the float sum over ranks of theirs.
  virtual bool orders_losses() const { return false; }
  virtual void share_losses(std::vector<double> shares) {}
  /// True when backward itself runs collectives (ZeRO stage 3 reduces each unit's gradients as
  /// its backward ends): every rank must then run every backward, a rank whose loss was not
  /// finite too (the agreed decision skips the update).
  virtual bool reduces_in_backward() const { return false; }

  /// Data-parallel runs agree on each step's decision by sending it with the window's
  /// gradients instead of in a collective of their own: share() before the window's last
  /// backward, agreed() after finish() combines every rank's. A single process agrees with
  /// itself.
  virtual bool shares_decisions() const { return false; }
  /// `nonfinite_on_device`, when defined, is a bool scalar on the model's device (a loss of the
  /// window was not finite) that joins `mine.nonfinite` without a host read before agreed().
  virtual void share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device = {}) {
    mine_ = mine;
    flag_ = nonfinite_on_device;
  }
  /// Agrees on the shared decision when the window reduced no gradients of the step runner's
  /// (a module that steps its own optimizers reduced its own): a small collective of its own.
  virtual void agree() {}
  virtual StepDecision agreed() const {
    StepDecision d = mine_;
    if (flag_.defined() && flag_.item<bool>()) d.nonfinite = true;
    return d;
  }

 private:
  StepDecision mine_;
  torch::Tensor flag_;
};

class NoGradientSync : public GradientSync {};

}  // namespace unitrain
