#pragma once
// NonfiniteWatch: what a step knows of non-finite losses and gradient norms until the run acts on
// them — the open window's flag (on the host, or or-ed on the device while reads are deferred),
// and when the check is late, the first bad step with its loss and norm — with the one settle()
// that every observation of the run (a log event, a validation pass, a save, its end) goes
// through, and its checkpoint entry (the window's flag).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>

#include "unitrain/engine/checkpoint_entry.h"

namespace unitrain {

class NonfiniteWatch : public CheckpointEntry {
 public:
  /// Stops the run for a non-finite `what` ("loss", "gradient") at `step`: on_nonfinite's
  /// callbacks, then the TrainError naming the step, `loss` and `grad_norm` (-1: the loss was
  /// the bad one). The step runner's.
  using Stop = std::function<void(const std::string& what, int64_t step, const at::Tensor& loss,
                                  double grad_norm)>;
  explicit NonfiniteWatch(Stop stop) : stop_(std::move(stop)) {}

  // --- The open accumulation window ---------------------------------------------------------
  /// A host read found a non-finite loss in the window.
  void window_saw_bad() { window_bad_ = true; }
  /// Deferred reads: `bad` (a bool scalar on the device) or-ed into the window's device flag.
  void window_may_be_bad(const at::Tensor& bad);
  /// The host's flag alone (no read of the device).
  bool window_seen_bad() const { return window_bad_; }
  /// The device flag (undefined: none yet), which travels with the window's decision.
  const at::Tensor& window_flag_on_device() const { return bad_on_device_; }
  /// Either flag (reads the device flag).
  bool window_bad() const;
  /// The window ended (updated, skipped or dropped): both flags cleared.
  void window_closed();

  // --- Late checks (StepRunner::checks_nonfinite_late) ---------------------------------------
  /// Keeps `step`, `loss` and the gradient's `norm` (undefined for a bad loss) on the device
  /// when `bad` (a bool scalar there) and no earlier bad step is kept.
  void remember_first_bad(const at::Tensor& bad, const at::Tensor& loss, const at::Tensor& norm,
                          int64_t step);
  /// Stops the run (Stop) when a loss or norm kept since the last settle() was not finite: one
  /// read of the device. Nothing when none was kept (immediate checks stopped at the step).
  void settle();

  // The checkpoint entry: trainer_state.json's section "nonfinite" ({"window_bad": ...}), for a
  // save inside a window that saw a non-finite loss (on_nonfinite: skip).
  void save(CheckpointWrite& out) override;
  void restore(const CheckpointRead& in) override;

 private:
  Stop stop_;
  bool window_bad_ = false;   ///< a non-finite loss was read earlier in this window
  at::Tensor bad_on_device_;  ///< deferred: a non-finite loss in this window (bool scalar)
  /// late(): the step of the first non-finite loss or gradient norm since the last settle()
  /// (-1: none), its loss and its norm (-1: the loss was the bad one), on the device.
  at::Tensor first_bad_step_, first_bad_loss_, first_bad_norm_;
};

}  // namespace unitrain
