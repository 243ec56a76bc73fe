#pragma once
// GradientSync: the seam where data-parallel training reduces gradients across processes.
#include <torch/types.h>

#include <vector>

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
  /// At the accumulation boundary, before clipping and the optimizer step: every gradient
  /// must be final (reduced and averaged) when this returns.
  virtual void finish(const std::vector<torch::Tensor>& params) {}

  /// Data-parallel runs share a few per-step flags (non-finite loss, stop, signals) by
  /// sending them with the window's gradients instead of in a collective of their own: set
  /// before the window's last backward (values >= 0), read after finish() as their sums over
  /// ranks. A single process has nothing to share.
  virtual bool carries_flags() const { return false; }
  virtual void set_flags(const std::vector<float>& flags) {}
  virtual std::vector<float> flags() const { return {}; }
};

class NoGradientSync : public GradientSync {};

}  // namespace unitrain
