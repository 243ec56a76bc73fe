#pragma once
// AutocastScope: LibTorch's automatic mixed precision, on for one scope.
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace unitrain {

/// While alive, operators on `device` tensors run under autocast with `dtype` (matrix products
/// and convolutions in the 16-bit type, precision-sensitive operators in float32), as Python's
/// `with torch.autocast(device, dtype)`: nested scopes work, the cast cache is cleared when the
/// outermost one ends, and the previous state comes back. A scope with `enabled` false does
/// nothing. On the CPU, LibTorch 1.13's autocast has no rule for layer_norm and group_norm
/// (bfloat16 input, float32 weight fail); the first scope adds one: they run in float32, as
/// PyTorch's CUDA autocast runs them.
class AutocastScope {
 public:
  AutocastScope(bool enabled, c10::DeviceType device, c10::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;
  AutocastScope(AutocastScope&& other) noexcept;
  AutocastScope& operator=(AutocastScope&&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Undefined;
};

}  // namespace unitrain
