#include "unitrain/engine/step/nonfinite_watch.h"

#include <torch/torch.h>

#include "unitrain/checkpoint/state_json.h"

namespace unitrain {
namespace {
constexpr const char* kSection = "nonfinite";
}  // namespace

void NonfiniteWatch::window_may_be_bad(const at::Tensor& bad) {
  bad_on_device_ = bad_on_device_.defined() ? bad_on_device_.logical_or(bad) : bad;
}

bool NonfiniteWatch::window_bad() const {
  return window_bad_ || (bad_on_device_.defined() && bad_on_device_.item<bool>());
}

void NonfiniteWatch::window_closed() {
  window_bad_ = false;
  bad_on_device_ = at::Tensor();
}

void NonfiniteWatch::remember_first_bad(const at::Tensor& bad, const at::Tensor& loss,
                                        const at::Tensor& norm, int64_t step) {
  torch::NoGradGuard no_grad;
  if (!first_bad_step_.defined()) {
    first_bad_step_ = torch::full({}, -1, loss.options().dtype(torch::kLong));
    first_bad_loss_ = torch::zeros({}, loss.options().dtype(torch::kFloat64));
    first_bad_norm_ = torch::full({}, -1.0, loss.options().dtype(torch::kFloat64));
  }
  const at::Tensor first = bad.logical_and(first_bad_step_.lt(0));
  first_bad_loss_ = torch::where(first, loss.to(torch::kFloat64), first_bad_loss_);
  if (norm.defined()) {
    first_bad_norm_ = torch::where(first, norm.to(torch::kFloat64), first_bad_norm_);
  }
  first_bad_step_.masked_fill_(first, step);
}

void NonfiniteWatch::settle() {
  if (!first_bad_step_.defined()) return;
  const int64_t step = first_bad_step_.item<int64_t>();  // the one wait for the device
  if (step < 0) return;
  const double norm = first_bad_norm_.item<double>();
  const at::Tensor loss = first_bad_loss_;
  first_bad_step_ = at::Tensor();
  stop_(norm == -1 ? "loss" : "gradient", step, loss, norm);
}

void NonfiniteWatch::save(CheckpointWrite& out) {
  out.state.set_section(kSection, StateJson{{"window_bad", window_bad()}}.dump());
}

void NonfiniteWatch::restore(const CheckpointRead& in) {
  window_closed();
  window_bad_ = state_section(in.state.section(kSection)).value("window_bad", false);
}

}  // namespace unitrain
