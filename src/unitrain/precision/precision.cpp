#include "unitrain/precision/precision.h"

#include <torch/torch.h>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

c10::DeviceType device_of(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) return p.device().type();
  return c10::DeviceType::CPU;
}

}  // namespace

std::string precision_name(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::Fp32:
      return "fp32";
    case PrecisionMode::Bf16Mixed:
      return "bf16-mixed";
    case PrecisionMode::Fp16Mixed:
      return "fp16-mixed";
    case PrecisionMode::Bf16True:
      return "bf16-true";
  }
  return "?";
}

Precision::Precision(PrecisionMode mode, c10::DeviceType device, bool autocast)
    : mode_(mode), device_(device), autocast_(autocast) {}

Precision::Precision(PrecisionMode mode, torch::nn::Module& module, const LossScalerOptions& scaler)
    : Precision(mode, device_of(module), /*autocast=*/mode != PrecisionMode::Fp32) {
  check(mode, module);
  if (mode == PrecisionMode::Fp16Mixed) scaler_ = std::make_unique<LossScaler>(scaler);
  if (mode == PrecisionMode::Bf16True) {
    masters_ = std::make_unique<MasterWeights>(module, torch::kBFloat16);
  }
}

void Precision::check(PrecisionMode mode, const torch::nn::Module& module) {
  check(mode, device_of(module));
}

void Precision::check(PrecisionMode mode, c10::DeviceType device) {
  UT_CHECK(mode != PrecisionMode::Fp16Mixed || device == c10::DeviceType::CUDA,
           "train.precision: fp16-mixed needs a CUDA device (LibTorch's CPU autocast computes in "
           "bfloat16 only) and the run is on the ",
           c10::DeviceTypeName(device, /*lower_case=*/true),
           torch::cuda::is_available() ? "" : " (this LibTorch has no CUDA)",
           "; use train.precision: bf16-mixed (16-bit matrix products, no loss scaling needed) "
           "or fp32");
}

std::unique_ptr<Precision> Precision::loss_scaling_only(torch::nn::Module& module,
                                                        const LossScalerOptions& scaler) {
  std::unique_ptr<Precision> p(
      new Precision(PrecisionMode::Fp16Mixed, device_of(module), /*autocast=*/false));
  p->scaler_ = std::make_unique<LossScaler>(scaler);
  return p;
}

AutocastScope Precision::autocast() const {
  const c10::ScalarType dtype =
      mode_ == PrecisionMode::Fp16Mixed ? torch::kFloat16 : torch::kBFloat16;
  return AutocastScope(autocast_, device_, dtype);
}

Batch Precision::inputs(const Batch& batch) const {
  if (!casts_inputs()) return batch;
  Batch out;
  for (const auto& [name, t] : batch) {
    out.set(name, t.is_floating_point() ? t.to(torch::kBFloat16) : t);
  }
  return out;
}

torch::Tensor Precision::scale_loss(const torch::Tensor& loss) const {
  return scaler_ ? scaler_->scale_loss(loss) : loss;
}

bool Precision::unscale_and_check(const std::vector<torch::Tensor>& params,
                                  const std::function<bool(bool)>& any_rank) {
  found_inf_ = scaler_ ? scaler_->unscale(params) : false;
  if (scaler_ && any_rank) found_inf_ = any_rank(found_inf_);
  if (masters_ && !found_inf_) masters_->gradients_to_masters();
  return found_inf_;
}

void Precision::adopt(torch::optim::Optimizer& optimizer) {
  if (!masters_) return;
  masters_->adopt(optimizer);
  master_list_.clear();
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& t : group.params()) master_list_.push_back(t);
  }
}

std::vector<torch::Tensor> Precision::clip_targets(const std::vector<torch::Tensor>& params) const {
  return masters_ ? master_list_ : params;
}

void Precision::finish_step(bool skipped) {
  if (scaler_) scaler_->update(found_inf_ || skipped);  // a skipped step backs off too
  if (masters_) {
    if (!skipped) masters_->masters_to_model();
    masters_->release_master_gradients();
  }
  found_inf_ = false;
}

}  // namespace unitrain
