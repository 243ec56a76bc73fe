#include "unitrain/precision/autocast_scope.h"

#include <ATen/autocast_mode.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <mutex>

namespace unitrain {
namespace {

at::Tensor in_fp32(const at::Tensor& t) {
  return t.defined() && t.is_floating_point() && t.scalar_type() != at::kFloat ? t.to(at::kFloat)
                                                                               : t;
}

c10::optional<at::Tensor> in_fp32(const c10::optional<at::Tensor>& t) {
  if (!t.has_value()) return t;
  return in_fp32(*t);
}

// The float32 rule of autocast for the norms LibTorch 1.13's CPU autocast leaves alone: every
// floating argument in float32, then the operator itself without autocast.
at::Tensor layer_norm_in_fp32(const at::Tensor& input, at::IntArrayRef normalized_shape,
                              const c10::optional<at::Tensor>& weight,
                              const c10::optional<at::Tensor>& bias, double eps,
                              bool cudnn_enable) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return at::layer_norm(in_fp32(input), normalized_shape, in_fp32(weight), in_fp32(bias), eps,
                        cudnn_enable);
}

at::Tensor group_norm_in_fp32(const at::Tensor& input, int64_t groups,
                              const c10::optional<at::Tensor>& weight,
                              const c10::optional<at::Tensor>& bias, double eps,
                              bool cudnn_enabled) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return at::group_norm(in_fp32(input), groups, in_fp32(weight), in_fp32(bias), eps, cudnn_enabled);
}

void add_cpu_norm_rules() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Kept for the life of the process, as a TORCH_LIBRARY_IMPL block would be.
    static auto* rules = new torch::Library(torch::Library::IMPL, "aten",
                                            c10::DispatchKey::AutocastCPU, __FILE__, __LINE__);
    rules->impl("layer_norm", TORCH_FN(layer_norm_in_fp32));
    rules->impl("group_norm", TORCH_FN(group_norm_in_fp32));
  });
}

}  // namespace

AutocastScope::AutocastScope(bool enabled, c10::DeviceType device, c10::ScalarType dtype) {
  if (!enabled) return;
  active_ = true;
  cuda_ = device == c10::DeviceType::CUDA;
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_enabled(true);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    add_cpu_norm_rules();
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
  at::autocast::increment_nesting();
}

AutocastScope::AutocastScope(AutocastScope&& other) noexcept
    : active_(other.active_),
      cuda_(other.cuda_),
      was_enabled_(other.was_enabled_),
      was_dtype_(other.was_dtype_) {
  other.active_ = false;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  }
}

}  // namespace unitrain
