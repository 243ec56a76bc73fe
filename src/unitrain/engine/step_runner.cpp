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

StepOutput checked_training_step(TrainModule& module, const Batch& batch) {
  StepOutput out = module.training_step(batch);
  UT_CHECK(out.loss.defined() && out.loss.numel() == 1,
           "training_step must return a scalar loss, got ",
           out.loss.defined() ? "a tensor of " + std::to_string(out.loss.numel()) + " elements"
                              : std::string("no loss"));
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

void StepRunner::nonfinite(const std::string& what, int64_t step, const MicroStep& m) {
  std::ostringstream terms;
  for (const auto& [k, v] : m.metrics) terms << " " << k << "=" << v.value.item<double>();
  throw TrainError(
      "non-finite " + what + " at step " + std::to_string(step) + ": loss=" +
      std::to_string(m.loss) + (m.metrics.empty() ? "" : ";" + terms.str()) +
      (m.grad_norm >= 0 || std::isnan(m.grad_norm) ? "; grad_norm=" + std::to_string(m.grad_norm) : "") +
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

MicroStep StepRunner::forward_backward(const Batch& batch, double weight, bool window_end,
                                       StepDecision mine, int64_t step) {
  MicroStep m;
  if (closure_) {  // the optimizer evaluates the loss itself, in update()
    closure_batch_ = &batch;
    m.window_end = true;
    return m;
  }
  m.window_end = window_end;
  StepOutput out = checked_training_step(module_, batch);
  m.loss = out.loss.item<double>();
  m.metrics = detached(out.metrics);
  // Data-parallel runs decide together at the window's end, from decisions that travel with
  // the gradients: every rank reaches the same collectives whatever its own loss was.
  const bool shared = sync_.shares_decisions();
  if (!std::isfinite(m.loss)) {
    if (options_.on_nonfinite == OnNonFinite::Stop && !shared) nonfinite("loss", step, m);
    window_bad_ = true;
  }
  if (window_end) {
    mine.nonfinite = window_bad_;
    sync_.share(mine);
  }
  if (!window_bad_) {
    sync_.before_backward(window_end);
    (weight == 1.0 ? out.loss : out.loss * weight).backward();
  }
  return m;
}

void StepRunner::sync_gradients(MicroStep& m, int64_t step) {
  if (closure_) return;  // the closure synchronises inside the optimizer's step
  // A rank that skipped its backward still joins every reduce (finish() launches them).
  if (sync_.shares_decisions() || !window_bad_) sync_.finish(params_);
  m.decision = sync_.agreed();
  m.skipped = m.decision.nonfinite;
  if (m.skipped && options_.on_nonfinite == OnNonFinite::Stop) {
    nonfinite(std::isfinite(m.loss) ? "loss (on another rank)" : "loss", step, m);
  }
}

void StepRunner::clip_gradients(MicroStep& m, int64_t step) {
  if (closure_ || m.skipped) return;
  if (options_.clip_grad_norm > 0) {
    m.grad_norm = torch::nn::utils::clip_grad_norm_(params_, options_.clip_grad_norm);
  } else if (options_.on_nonfinite == OnNonFinite::Skip) {
    std::vector<torch::Tensor> norms;
    for (const auto& p : params_) {
      if (p.grad().defined()) norms.push_back(p.grad().norm());
    }
    m.grad_norm = norms.empty() ? 0.0 : torch::stack(norms).norm().item<double>();
  }
  if (m.grad_norm != -1 && !std::isfinite(m.grad_norm)) {
    if (options_.on_nonfinite == OnNonFinite::Stop) nonfinite("gradient", step, m);
    m.skipped = true;
  }
}

void StepRunner::update(MicroStep& m, int64_t step) {
  if (closure_) return update_with_closure(m, step);
  if (!m.skipped) optimizer_.step();
  zero_grads();
  window_bad_ = false;
}

void StepRunner::update_with_closure(MicroStep& m, int64_t step) {
  bool first = true;
  auto closure = [&]() -> torch::Tensor {
    zero_grads();
    StepOutput out = checked_training_step(module_, *closure_batch_);
    if (first) {
      m.loss = out.loss.item<double>();
      m.metrics = detached(out.metrics);
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
  optimizer_.step(closure);
  closure_batch_ = nullptr;
  if (!std::isfinite(m.loss)) {
    if (options_.on_nonfinite == OnNonFinite::Stop) nonfinite("loss", step, m);
    m.skipped = true;
  }
  zero_grads();
}

}  // namespace unitrain
