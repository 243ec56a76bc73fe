#pragma once
// StepDecision: what every rank acts on at the end of an optimizer step, agreed across ranks.
#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <limits>
#include <type_traits>

#include "unitrain/core/save_signals.h"

namespace unitrain {

/// The decisions one step ends with. In data-parallel runs each rank's own travel with the
/// window's gradients (GradientSync::share) and every rank acts on their combination (agreed):
/// any rank's non-finite loss skips the update everywhere, any rank's stop, pause or signal
/// stops all.
struct StepDecision {
  bool nonfinite = false;  ///< a non-finite loss in the window: skip the update (or stop)
  bool stop = false;       ///< end training after this step (early stopping, a callback)
  /// SIGINT or a checkpoint.on_signal signal (one of save_signals()) received: save a
  /// checkpoint and end.
  int signal = 0;
  bool pause = false;  ///< save a checkpoint and end, to resume later (a time budget)
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

  /// The decision as numbers whose sum over ranks decode() reads back: one slot a flag, one
  /// a signal (SIGINT, then save_signals() in order), and the last the loss.
  static constexpr int kSignalSlots = 1 + 5;
  static constexpr int kSlots = 6 + kSignalSlots + 1;
  static constexpr double kFloatMax = std::numeric_limits<float>::max();
  std::array<float, kSlots> encode() const {
    std::array<float, kSlots> e{nonfinite ? 1.f : 0.f, stop ? 1.f : 0.f,
                                pause ? 1.f : 0.f,     save_soon ? 1.f : 0.f,
                                save_now ? 1.f : 0.f,  missing_gradient ? 1.f : 0.f};
    for (int i = 0; i < kSignalSlots; ++i) e[6 + i] = signal == signal_of_slot(i) ? 1.f : 0.f;
    // A finite loss beyond float's range stays finite (the largest float): a spike, not NaN.
    e[kSlots - 1] =
        static_cast<float>(std::isfinite(loss) ? std::clamp(loss, -kFloatMax, kFloatMax) : loss);
    return e;
  }
  /// The combined decision of ranks whose encode()d values were summed into `sums`; SIGINT
  /// wins over the others, which win in save_signals()' order.
  static StepDecision decode(const float* sums) {
    StepDecision d;
    d.nonfinite = sums[0] > 0;
    d.stop = sums[1] > 0;
    d.pause = sums[2] > 0;
    d.save_soon = sums[3] > 0;
    d.save_now = sums[4] > 0;
    d.missing_gradient = sums[5] > 0;
    for (int i = 0; i < kSignalSlots && d.signal == 0; ++i) {
      if (sums[6 + i] > 0) d.signal = signal_of_slot(i);
    }
    d.loss = sums[kSlots - 1];
    return d;
  }

 private:
  static int signal_of_slot(int i) {
    static_assert(kSignalSlots == 1 + std::tuple_size_v<std::decay_t<decltype(save_signals())>>);
    return i == 0 ? SIGINT : save_signals()[i - 1].number;
  }
};

}  // namespace unitrain
