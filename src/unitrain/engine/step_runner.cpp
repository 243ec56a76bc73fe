#include "unitrain/engine/step_runner.h"

#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

std::map<std::string, MetricValue> detached(const std::map<std::string, MetricValue>& m) {
  std::map<std::string, MetricValue> out;
  for (const auto& [k, v] : m) out[k] = MetricValue(v.value.detach(), v.weight, v.exp_of_mean);
  return out;
}

}  // namespace

StepRunner::StepRunner(TrainModule& module, torch::optim::Optimizer& optimizer,
                       const TrainOptions& options, GradientSync& sync)
    : module_(module), optimizer_(optimizer), options_(options), sync_(sync),
      closure_(needs_closure(optimizer)) {
  for (const auto& group : optimizer_.param_groups()) {
    for (const auto& p : group.params()) params_.push_back(p);
  }
}

void StepRunner::nonfinite(const std::string& what, int64_t step, const MicroStepResult& r) {
  std::ostringstream terms;
  for (const auto& [k, v] : r.metrics) terms << " " << k << "=" << v.value.item<double>();
  throw TrainError(
      "non-finite " + what + " at step " + std::to_string(step) + ": loss=" +
      std::to_string(r.loss) + (r.metrics.empty() ? "" : ";" + terms.str()) +
      (r.grad_norm >= 0 || std::isnan(r.grad_norm) ? "; grad_norm=" + std::to_string(r.grad_norm) : "") +
      ". Lower optimizer.lr, set train.clip_grad_norm, check the data, or set "
      "train.on_nonfinite: skip to skip such updates");
}

void StepRunner::zero_grads() {
  // Not Optimizer::zero_grad(): it detaches in place, which gradients that are views of a
  // data-parallel bucket do not allow. These have no history; zeroing them is enough.
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      torch::Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (grad.grad_fn()) grad = grad.detach();
      grad.zero_();
    }
  }
}

MicroStepResult StepRunner::run(const Batch& batch, double weight, bool last_in_window,
                                int64_t step) {
  if (closure_) return run_with_closure(batch, step);
  MicroStepResult r;
  StepOutput out = module_.training_step(batch);
  UT_CHECK(out.loss.defined() && out.loss.numel() == 1,
           "training_step must return a scalar loss, got ",
           out.loss.defined() ? "a tensor of " + std::to_string(out.loss.numel()) + " elements"
                              : std::string("no loss"));
  r.loss = out.loss.item<double>();
  r.metrics = detached(out.metrics);
  // Data-parallel runs decide together at the window's end, from flags that travel with the
  // gradients: every rank reaches the same collectives whatever its own loss was.
  const bool shared = share_flags_ && sync_.carries_flags();
  if (!std::isfinite(r.loss)) {
    if (options_.on_nonfinite == OnNonFinite::Stop && !shared) nonfinite("loss", step, r);
    window_bad_ = true;
  }
  if (last_in_window && shared) sync_.set_flags(share_flags_(window_bad_));
  if (!window_bad_) {
    sync_.before_backward(last_in_window);
    (weight == 1.0 ? out.loss : out.loss * weight).backward();
  }
  if (!last_in_window) return r;

  r.stepped = true;
  bool skip = window_bad_;
  if (shared) {
    // A rank that skipped its backward still joins every reduce (finish() launches them).
    sync_.finish(params_);
    const std::vector<float> agreed = sync_.flags();
    skip = !agreed.empty() && agreed[0] > 0;
    if (agreed_flags_) agreed_flags_(agreed);
    if (skip && options_.on_nonfinite == OnNonFinite::Stop) {
      nonfinite(std::isfinite(r.loss) ? "loss (on another rank)" : "loss", step, r);
    }
  }
  if (!skip) {
    if (!shared) sync_.finish(params_);
    if (options_.clip_grad_norm > 0) {
      r.grad_norm = torch::nn::utils::clip_grad_norm_(params_, options_.clip_grad_norm);
    } else if (options_.on_nonfinite == OnNonFinite::Skip) {
      std::vector<torch::Tensor> norms;
      for (const auto& p : params_) {
        if (p.grad().defined()) norms.push_back(p.grad().norm());
      }
      r.grad_norm = norms.empty() ? 0.0 : torch::stack(norms).norm().item<double>();
    }
    if (r.grad_norm != -1 && !std::isfinite(r.grad_norm)) {
      if (options_.on_nonfinite == OnNonFinite::Stop) nonfinite("gradient", step, r);
      skip = true;
    }
  }
  if (!skip) {
    if (before_update_) before_update_();
    optimizer_.step();
  }
  r.skipped = skip;
  zero_grads();
  window_bad_ = false;
  return r;
}

MicroStepResult StepRunner::run_with_closure(const Batch& batch, int64_t step) {
  MicroStepResult r;
  bool first = true;
  auto closure = [&]() -> torch::Tensor {
    zero_grads();
    StepOutput out = module_.training_step(batch);
    if (first) {
      r.loss = out.loss.item<double>();
      r.metrics = detached(out.metrics);
      first = false;
    }
    if (!std::isfinite(out.loss.item<double>())) return out.loss.detach();
    sync_.before_backward(true);
    out.loss.backward();
    sync_.finish(params_);
    if (options_.clip_grad_norm > 0) {
      torch::nn::utils::clip_grad_norm_(params_, options_.clip_grad_norm);
    }
    return out.loss.detach();
  };
  if (before_update_) before_update_();
  optimizer_.step(closure);
  r.stepped = true;
  if (!std::isfinite(r.loss)) {
    if (options_.on_nonfinite == OnNonFinite::Stop) nonfinite("loss", step, r);
    r.skipped = true;
  }
  zero_grads();
  return r;
}

}  // namespace unitrain
