#pragma once
// StepDecision: what every rank acts on at the end of an optimizer step, agreed across ranks.
#include <array>
#include <csignal>

namespace unitrain {

/// The decisions one step ends with. In data-parallel runs each rank's own travel with the
/// window's gradients (GradientSync::share) and every rank acts on their combination (agreed):
/// any rank's non-finite loss skips the update everywhere, any rank's stop, pause or signal
/// stops all.
struct StepDecision {
  bool nonfinite = false;  ///< a non-finite loss in the window: skip the update (or stop)
  bool stop = false;       ///< end training after this step (early stopping, a callback)
  int signal = 0;          ///< SIGINT or SIGTERM received: save a checkpoint and end
  bool pause = false;      ///< save a checkpoint and end, to resume later (a time budget)
  /// Rank 0's clock for `checkpoint.every: auto`: the least (most) time between periodic
  /// saves has passed since the last save.
  bool save_soon = false;
  bool save_now = false;
  /// A parameter got no gradient in the window on some rank (data parallel only): the ranks
  /// then find out which, and give no rank's zeros to the optimizer.
  bool missing_gradient = false;
  /// train.divergence.spike_factor: this rank's share of the window's mean loss (its samples'
  /// mean / ranks); agreed, the sum: the mean over every rank's samples. 0 when not watched.
  double loss = 0;

  /// The decision as numbers whose sum over ranks decode() reads back.
  static constexpr int kSlots = 9;
  std::array<float, kSlots> encode() const {
    return {nonfinite ? 1.f : 0.f, stop ? 1.f : 0.f, signal == SIGINT ? 1.f : 0.f,
            signal == SIGTERM ? 1.f : 0.f, pause ? 1.f : 0.f, save_soon ? 1.f : 0.f,
            save_now ? 1.f : 0.f, missing_gradient ? 1.f : 0.f, static_cast<float>(loss)};
  }
  /// The combined decision of ranks whose encode()d values were summed into `sums`; SIGINT
  /// wins over SIGTERM.
  static StepDecision decode(const float* sums) {
    StepDecision d;
    d.nonfinite = sums[0] > 0;
    d.stop = sums[1] > 0;
    d.signal = sums[2] > 0 ? SIGINT : sums[3] > 0 ? SIGTERM : 0;
    d.pause = sums[4] > 0;
    d.save_soon = sums[5] > 0;
    d.save_now = sums[6] > 0;
    d.missing_gradient = sums[7] > 0;
    d.loss = sums[8];
    return d;
  }
};

}  // namespace unitrain
