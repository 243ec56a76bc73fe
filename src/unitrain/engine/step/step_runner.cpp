#include "unitrain/engine/step/step_runner.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "unitrain/core/error.h"
#include "unitrain/core/run_position.h"
#include "unitrain/engine/step/module_error.h"
#include "unitrain/log/console.h"
#include "unitrain/optim/grad_clip.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/precision/precision_support.h"

namespace unitrain {
namespace {

std::map<std::string, MetricValue> detached(const std::map<std::string, MetricValue>& m) {
  std::map<std::string, MetricValue> out;
  for (const auto& [k, v] : m) out[k] = MetricValue(v.value.detach(), v.weight, v.exp_of_mean);
  return out;
}

}  // namespace

StepOutput StepRunner::training_step(const Batch& batch, int64_t step) {
  StepOutput out;
  try {
    AutocastScope autocast = precision_.autocast();
    out = precision_.casts_inputs() ? module_.training_step(precision_.inputs(batch))
                                    : module_.training_step(batch);
  } catch (...) {
    rethrow_module_error(fmt::format("the module's training_step at step {}", step));
  }
  UT_CHECK(out.loss.defined() && out.loss.numel() == 1,
           "training_step must return a scalar loss, got ",
           out.loss.defined() ? "a tensor of " + std::to_string(out.loss.numel()) + " elements"
                              : std::string("no loss"));
  if (!leaves_checked_) {  // once: the graph is the same in every step of most models
    leaves_checked_ = true;
    std::vector<torch::Tensor> known = module_.weights().parameters(/*recurse=*/true);
    known.insert(known.end(), params_.begin(), params_.end());
    const std::string warning = stray_leaves_warning(leaves_outside(out.loss, known));
    if (!warning.empty()) log::warn(warning);
  }
  return out;
}

StepRunner::StepRunner(TrainModule& module, torch::optim::Optimizer* optimizer,
                       const TrainOptions& options, GradientSync& sync, CallbackList& hooks,
                       Precision& precision, Profiler* profiler)
    : module_(module),
      optimizer_(optimizer),
      options_(options),
      sync_(sync),
      hooks_(hooks),
      precision_(precision),
      profiler_(profiler),
      closure_(optimizer != nullptr && needs_closure(*optimizer)),
      watch_([this](const std::string& what, int64_t step, const torch::Tensor& loss,
                    double grad_norm) {
        MicroStep m;
        m.loss = loss;
        m.grad_norm = grad_norm;
        nonfinite(what, step, m, /*stops=*/true);
      }) {
  if (closure_) check_precision_support(precision.mode(), closure_optimizer_precisions());
  if (!optimizer_) {  // manual optimization: gradients and updates are the module's business
    defer_reads_ = false;
    return;
  }
  for (const auto& group : optimizer_->param_groups()) {
    for (const auto& p : group.params()) params_.push_back(p);
  }
  precision_.adopt(*optimizer_);  // bf16-true: the groups now hold the float32 masters
  clip_params_ = precision_.clip_targets(params_);
  // Parts of the gradients on each rank (ZeRO 3): an overflow on one rank skips every rank's.
  if (sync_.gradients_partitioned()) {
    any_rank_ = [this](bool found) { return sync_.sum_across_ranks(found ? 1.0 : 0.0) > 0; };
  }
  defer_reads_ = !closure_ && options_.defers_reads(!params_.empty() && !params_[0].is_cpu());
}

double MicroStep::loss_value() const {
  return loss.defined() ? loss.item<double>() : std::numeric_limits<double>::quiet_NaN();
}

void StepRunner::drop_window() {
  clear_gradients();
  watch_.window_closed();
  window_loss_ = torch::Tensor();
  window_shares_.clear();
}

void StepRunner::clear_gradients() {
  const bool keep = sync_.keeps_gradients();
  for (auto& p : params_) {
    torch::Tensor& grad = p.mutable_grad();
    if (!grad.defined()) continue;
    if (!keep) {
      grad = torch::Tensor();
      continue;
    }
    if (grad.grad_fn()) grad = grad.detach();
    grad.zero_();
  }
}

void StepRunner::zero_grads() {
  hooks_.call("on_before_zero_grad", &Callback::on_before_zero_grad);
  // Data-parallel gradients are views of the reduce buckets: zeroed in place (not with
  // Optimizer::zero_grad(), which detaches in place, which views do not allow; these have no
  // history). Otherwise they are freed, and the next backward writes fresh ones instead of
  // adding to zeros (PyTorch's set_to_none). (The model's gradients: bf16-true's masters get
  // theirs from the model's each step.)
  clear_gradients();
  hooks_.call("on_after_zero_grad", &Callback::on_after_zero_grad);
}

void StepRunner::backward(const torch::Tensor& loss, bool window_end, int64_t step) {
  Profiler::Range range(profiler_, Phase::Backward);
  if (position_) position_->enter("backward");
  hooks_.call("on_before_backward", &Callback::on_before_backward, loss);
  sync_.before_backward(window_end);
  loss_backward(loss, step);
  hooks_.call("on_after_backward", &Callback::on_after_backward);
  sync_.after_backward();
}

void StepRunner::loss_backward(const torch::Tensor& loss, int64_t step) {
  try {
    loss.backward();
  } catch (...) {
    rethrow_module_error(
        fmt::format("the backward of the loss training_step returned at step {}", step),
        "(a loss computed from detached tensors, or without the parameters, has no gradient)");
  }
}

void StepRunner::finish_sync() {
  Profiler::Range range(profiler_, Phase::GradientSync);
  hooks_.call("on_before_gradient_sync", &Callback::on_before_gradient_sync);
  sync_.finish(params_);
  hooks_.call("on_after_gradient_sync", &Callback::on_after_gradient_sync);
}

MicroStep StepRunner::forward_backward(const Batch& batch, double weight, bool window_end,
                                       StepDecision mine, int64_t step) {
  MicroStep m;
  if (closure_) {  // the optimizer evaluates the loss itself, in update()
    closure_batch_ = &batch;
    m.window_end = true;
    return m;
  }
  if (pipeline_) return staged_forward_backward(batch, weight, window_end, mine, step);
  m.window_end = window_end;
  Profiler::Range forward(profiler_, Phase::Forward);
  StepOutput out = training_step(batch, step);
  m.loss = out.loss.detach();
  m.metrics = detached(out.metrics);
  // Data-parallel runs decide together at the window's end, from decisions that travel with
  // the gradients: every rank reaches the same collectives whatever its own loss was.
  if (defer_reads_) {  // no host read: the flag stays on the device until the window's end
    torch::Tensor bad = torch::isfinite(m.loss).logical_not();
    if (checks_nonfinite_late()) {  // (no window flag: nothing reads it at the window's end)
      watch_.remember_first_bad(bad, m.loss, torch::Tensor(), step);
    } else {
      watch_.window_may_be_bad(bad);
    }
  } else if (!std::isfinite(m.loss_value())) {
    if (options_.on_nonfinite == OnNonFinite::Stop && !sync_.shares_decisions()) {
      nonfinite("loss", step, m, true);
    }
    watch_.window_saw_bad();
  }
  if (guard_ && guard_->watches_spikes()) {  // this rank's share of the window's mean loss
    torch::Tensor share = m.loss.to(torch::kFloat64) * weight;
    window_loss_ = window_loss_.defined() ? window_loss_ + share : share;
    if (sync_.orders_losses()) window_shares_.push_back(share);
  }
  if (window_end) {
    mine.nonfinite = watch_.window_seen_bad();
    if (window_loss_.defined()) mine.loss = window_loss_.item<double>();  // a host read
    window_loss_ = torch::Tensor();
    if (!window_shares_.empty()) {  // distributed.reproducible: summed in shard order
      const torch::Tensor host = torch::stack(window_shares_).cpu();
      sync_.share_losses({host.data_ptr<double>(), host.data_ptr<double>() + host.numel()});
      window_shares_.clear();
    }
    // (checked late: undefined, settle() reads)
    sync_.share(mine, watch_.window_flag_on_device());
  }
  if (!optimizer_) return m;  // training_step ran the module's own backward and updates
  if (!watch_.window_seen_bad() || sync_.reduces_in_backward()) {  // (ZeRO 3: all collectives)
    backward(precision_.scale_loss(weight == 1.0 ? out.loss : out.loss * weight), window_end, step);
  }
  return m;
}

void StepRunner::sync_gradients(MicroStep& m, int64_t step) {
  if (closure_) return;  // the closure synchronises inside the optimizer's step
  if (!optimizer_) {
    sync_.agree();  // the module's backwards reduced its gradients: the decisions alone
  } else if (sync_.shares_decisions() || !watch_.window_seen_bad()) {
    // A rank that skipped its backward still joins every reduce (finish() launches them).
    finish_sync();
  }
  m.decision = sync_.agreed();  // deferred: the one host read of the window's flag
  m.skipped = m.decision.nonfinite;
  if (m.skipped) {
    on_nonfinite(watch_.window_bad() ? "loss" : "loss (on another rank)", step, m);
  } else if (guard_ && guard_->watches_spikes()) {
    check_spike(m, step);
  }
}

void StepRunner::clip_gradients(MicroStep& m, int64_t step) {
  if (closure_ || m.skipped || !optimizer_) return;
  Profiler::Range range(profiler_, Phase::Clip);
  // Gradients as the optimizer will see them: unscaled (fp16-mixed: an overflow means the
  // scale was too high, not that training diverged: skip the step, back off, go on).
  if (precision_.unscale_and_check(params_, any_rank_)) {
    m.skipped = true;
    return;
  }
  hooks_.call("on_before_clip", &Callback::on_before_clip);
  if (sync_.measures_norm()) {  // distributed.reproducible: the same double on every world size
    if (options_.clip_grad_norm > 0 || options_.on_nonfinite != OnNonFinite::Stop) {
      m.grad_norm = clip_measured();
      m.norm = torch::tensor(m.grad_norm, torch::kFloat64);
    }
  } else if (sync_.gradients_partitioned()) {
    if (options_.clip_grad_norm > 0 || options_.on_nonfinite != OnNonFinite::Stop) {
      m.grad_norm = clip_partitioned();
      m.norm = torch::tensor(m.grad_norm, torch::kFloat64);
    }
  } else if (options_.clip_grad_norm > 0) {
    m.norm = clip_gradient_norm(clip_params_, options_.clip_grad_norm);
  } else if (options_.on_nonfinite != OnNonFinite::Stop) {
    m.norm = gradient_norm(clip_params_);
  }
  // The norm on the host only where something decides on it now (skip, rollback, a stop taken
  // at each step) or a callback reads it: otherwise no step waits for the device.
  const bool late = checks_nonfinite_late();
  if (m.norm.defined() && m.grad_norm == -1 && (!late || hooks_.reads_step_values())) {
    m.grad_norm = m.norm.item<double>();
  }
  hooks_.call("on_after_clip", &Callback::on_after_clip, m.grad_norm);
  if (m.grad_norm != -1 && !std::isfinite(m.grad_norm)) {
    on_nonfinite("gradient", step, m);
    m.skipped = true;
  } else if (late && m.norm.defined() && m.grad_norm == -1) {
    watch_.remember_first_bad(torch::isfinite(m.norm).logical_not(), m.loss, m.norm, step);
  }
}

double StepRunner::clip_partitioned() {
  // ZeRO stage 2: each rank holds its partition's gradients; the global norm is the root of
  // the sum over ranks of each part's squared norm, and each rank scales its own part, as
  // clip_grad_norm_ would scale them all (the same coefficient: max / (norm + 1e-6)).
  std::vector<torch::Tensor> grads;
  for (const auto& p : clip_params_) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  double local = 0;
  if (!grads.empty()) {  // one host read for the rank's part, not one per tensor
    std::vector<torch::Tensor> norms;
    for (const auto& g : grads) norms.push_back(g.norm().to(torch::kFloat64));
    local = torch::stack(norms).square().sum().item<double>();
  }
  const double norm = std::sqrt(sync_.sum_across_ranks(local));
  if (options_.clip_grad_norm > 0) {
    const double coef = options_.clip_grad_norm / (norm + 1e-6);
    if (coef < 1) {
      torch::NoGradGuard no_grad;
      for (auto& g : grads) g.mul_(coef);
    }
  }
  return norm;
}

double StepRunner::clip_measured() {
  const double norm = sync_.norm();
  const double coef = options_.clip_grad_norm / (norm + 1e-6);
  if (options_.clip_grad_norm > 0 && coef < 1) {  // (a NaN norm: nothing scaled, the step skips)
    torch::NoGradGuard no_grad;
    for (auto& p : clip_params_) {
      if (p.grad().defined()) p.mutable_grad().mul_(coef);
    }
  }
  return norm;
}

void StepRunner::update(MicroStep& m, int64_t step) {
  Profiler::Range range(profiler_, Phase::Optimizer);
  if (closure_) return update_with_closure(m, step);
  hooks_.call("on_before_optimizer_step", &Callback::on_before_optimizer_step, m.skipped);
  // A step that trains: its loss joins train.divergence's moving mean.
  if (guard_ && !m.skipped) guard_->record(m.decision.loss);
  if (!optimizer_) {  // the module stepped its optimizers in training_step
    hooks_.call("on_after_optimizer_step", &Callback::on_after_optimizer_step, m.skipped);
    watch_.window_closed();
    return;
  }
  if (!m.skipped) {
    if (sharding_) {
      sharding_->step();
    } else if (optimizer_step_) {
      optimizer_step_();
    } else {
      optimizer_->step();
    }
  }
  precision_.finish_step(m.skipped);
  hooks_.call("on_after_optimizer_step", &Callback::on_after_optimizer_step, m.skipped);
  zero_grads();
  watch_.window_closed();
}

MicroStep StepRunner::step_body(const Batch& batch, const std::function<void()>& optimizer_step,
                                int64_t step) {
  MicroStep m;
  m.window_end = true;
  StepOutput out = training_step(batch, step);
  m.loss = out.loss.detach();
  m.metrics = detached(out.metrics);
  loss_backward(precision_.scale_loss(out.loss), step);
  if (options_.clip_grad_norm > 0) {
    m.norm = clip_gradient_norm(clip_params_, options_.clip_grad_norm);
  }
  optimizer_step();
  return m;
}

void StepRunner::step_body_done(MicroStep& m, StepDecision mine, int64_t step) {
  sync_.share(mine, torch::Tensor());
  m.decision = sync_.agreed();
  if (checks_nonfinite_late()) {
    watch_.remember_first_bad(torch::isfinite(m.loss).logical_not(), m.loss, torch::Tensor(), step);
    if (m.norm.defined()) {
      watch_.remember_first_bad(torch::isfinite(m.norm).logical_not(), m.loss, m.norm, step);
    }
  } else {  // immediate reads: this step's numbers now (the update has run: the run stops)
    if (m.norm.defined()) m.grad_norm = m.norm.item<double>();
    if (!std::isfinite(m.loss_value())) nonfinite("loss", step, m, /*stops=*/true);
    if (m.norm.defined() && !std::isfinite(m.grad_norm)) {
      nonfinite("gradient", step, m, /*stops=*/true);
    }
  }
  hooks_.call("on_before_optimizer_step", &Callback::on_before_optimizer_step, false);
  hooks_.call("on_after_optimizer_step", &Callback::on_after_optimizer_step, false);
}

void StepRunner::update_with_closure(MicroStep& m, int64_t step) {
  bool first = true;
  auto closure = [&]() -> torch::Tensor {
    zero_grads();
    StepOutput out = training_step(*closure_batch_, step);
    if (first) {
      m.loss = out.loss.detach();
      m.metrics = detached(out.metrics);
      first = false;
    }
    if (!std::isfinite(out.loss.item<double>())) return out.loss.detach();
    backward(out.loss, true, step);
    finish_sync();
    if (options_.clip_grad_norm > 0) {
      hooks_.call("on_before_clip", &Callback::on_before_clip);
      const double norm = torch::nn::utils::clip_grad_norm_(params_, options_.clip_grad_norm);
      hooks_.call("on_after_clip", &Callback::on_after_clip, norm);
    }
    return out.loss.detach();
  };
  hooks_.call("on_before_optimizer_step", &Callback::on_before_optimizer_step, false);
  optimizer_->step(closure);
  closure_batch_ = nullptr;
  if (!std::isfinite(m.loss_value())) {
    m.skipped = true;
    on_nonfinite("loss", step, m);
  }
  hooks_.call("on_after_optimizer_step", &Callback::on_after_optimizer_step, m.skipped);
  zero_grads();
}

}  // namespace unitrain
