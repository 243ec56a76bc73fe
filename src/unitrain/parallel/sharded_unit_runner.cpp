#include "unitrain/parallel/sharded_unit_runner.h"

#include <torch/torch.h>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

}  // namespace

struct ShardedUnitRunner::Pending {
  std::vector<int> backwards;  ///< per unit of the parameters
  bool prefetch = false;       ///< launch the next unit's gather before running this one
};

namespace {

/// What a unit's backward needs: its parameters, and the graph its forward recorded (from the
/// inputs, detached, to the outputs).
struct RecordedUnit : torch::CustomClassHolder {
  std::shared_ptr<ShardedParameters> params;
  std::shared_ptr<ShardedUnitRunner::Pending> pending;
  int unit = 0;      ///< the unit of the parameters (a joined one)
  bool last = true;  ///< the last member of its joined unit: forward releases it
  TensorsFn fn;
  variable_list inputs, outputs;
};

/// The autograd node of one unit. Its tensor inputs are an anchor that requires a gradient (so
/// that the node is in the graph even when no input requires one: the unit's parameters need
/// their gradients) and the unit's inputs.
struct UnitFunction : torch::autograd::Function<UnitFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& /*anchor*/,
                               at::TensorList inputs, const c10::intrusive_ptr<RecordedUnit>& u) {
    u->params->gather(u->unit);
    // The next unit's gather runs while this one computes.
    if (u->pending->prefetch && u->unit + 1 < u->params->units()) u->params->prefetch(u->unit + 1);
    for (const auto& t : inputs) {
      torch::Tensor in = t.detach();
      if (t.requires_grad()) in.requires_grad_(true);
      u->inputs.push_back(in);
    }
    {
      torch::AutoGradMode grad(true);  // the unit's own graph (a Function's forward has none)
      u->outputs = u->fn(u->inputs);
    }
    if (u->last) u->params->release(u->unit);
    ++u->pending->backwards[static_cast<size_t>(u->unit)];
    variable_list out;
    for (const auto& t : u->outputs) {
      out.push_back(t.detach());
      if (!(t.is_floating_point() || t.is_complex())) ctx->mark_non_differentiable({out.back()});
    }
    ctx->saved_data["unit"] = c10::IValue::make_capsule(u);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto u =
        c10::static_intrusive_pointer_cast<RecordedUnit>(ctx->saved_data["unit"].toCapsule());
    u->params->gather(u->unit);  // autograd's saved views of the parameters see them again
    // The unit before, whose backward comes next, gathers while this one's runs.
    auto& backwards = u->pending->backwards;
    if (u->pending->prefetch && u->unit > 0 && backwards[static_cast<size_t>(u->unit - 1)] > 0) {
      u->params->prefetch(u->unit - 1);
    }
    variable_list roots, grads;
    for (size_t i = 0; i < u->outputs.size() && i < grad_outputs.size(); ++i) {
      if (u->outputs[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(u->outputs[i]);
        grads.push_back(grad_outputs[i]);
      }
    }
    if (!roots.empty()) torch::autograd::backward(roots, grads);
    // A joined unit's gradients are reduced once every member that ran has backpropagated.
    if (--backwards[static_cast<size_t>(u->unit)] == 0) {
      u->params->reduce_gradients(u->unit, 1.0);
      u->params->release(u->unit);
      // The first unit's was the last backward: nothing gathered may outlive it into the
      // optimizer's step (a unit prefetched that the model did not run).
      if (u->unit == 0) u->params->release_all();
    }
    variable_list input_grads{torch::Tensor()};  // the anchor's
    for (const auto& t : u->inputs) {
      input_grads.push_back(t.requires_grad() ? t.grad() : torch::Tensor());
    }
    input_grads.emplace_back();  // the recorded unit's (not a tensor)
    u->inputs.clear();           // the graph goes with the node
    u->outputs.clear();
    u->fn = nullptr;
    return input_grads;
  }
};

}  // namespace

ShardedUnitRunner::ShardedUnitRunner(std::shared_ptr<ShardedParameters> params,
                                     std::vector<int> group_of, bool prefetch)
    : params_(std::move(params)), group_of_(std::move(group_of)), pending_(new Pending) {
  pending_->prefetch = prefetch;
  if (group_of_.empty()) {
    for (int u = 0; u < params_->units(); ++u) group_of_.push_back(u);
  }
  for (size_t u = 0; u < group_of_.size(); ++u) {
    last_member_.push_back(u + 1 == group_of_.size() || group_of_[u + 1] != group_of_[u]);
  }
  pending_->backwards.assign(static_cast<size_t>(params_->units()), 0);
}

std::vector<torch::Tensor> ShardedUnitRunner::run(size_t unit, const TensorsFn& fn,
                                                  const std::vector<torch::Tensor>& inputs) {
  UT_CHECK_TRAIN(unit < group_of_.size(), "distributed.zero: 3: the model ran unit ", unit,
                 " but its units() lists ", group_of_.size());
  const int joined = group_of_[unit];
  if (!torch::GradMode::is_enabled()) {
    params_->gather(joined);
    if (pending_->prefetch && joined + 1 < params_->units()) params_->prefetch(joined + 1);
    std::vector<torch::Tensor> out = fn(inputs);
    if (last_member_[unit]) params_->release(joined);
    // The last unit: nothing gathered outlives the pass (validation's weights may change next).
    if (unit + 1 == group_of_.size()) params_->release_all();
    return out;
  }
  auto recorded = c10::make_intrusive<RecordedUnit>();
  recorded->params = params_;
  recorded->pending = pending_;
  recorded->unit = joined;
  recorded->last = last_member_[unit];
  recorded->fn = fn;
  static const torch::Tensor anchor = torch::empty({0}).requires_grad_(true);
  return UnitFunction::apply(anchor, at::TensorList(inputs), recorded);
}

}  // namespace unitrain
