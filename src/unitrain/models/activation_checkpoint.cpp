#include "unitrain/models/activation_checkpoint.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <mutex>
#include <optional>

#include "unitrain/models/model.h"

namespace unitrain {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The state a recomputation must see as the first run saw it: the generators dropout draws
/// from and autocast's switches.
struct RecordedState {
  torch::Tensor cpu_generator;
  std::optional<c10::Device> cuda;  ///< the device of the first CUDA input
  torch::Tensor cuda_generator_state;
  bool cpu_autocast = false, gpu_autocast = false;
  c10::ScalarType cpu_dtype = c10::ScalarType::BFloat16, gpu_dtype = c10::ScalarType::Half;

  static RecordedState now(at::TensorList inputs) {
    RecordedState s;
    s.cpu_generator = generator_state(at::detail::getDefaultCPUGenerator());
    for (const auto& t : inputs) {
      if (t.defined() && t.is_cuda()) {
        s.cuda = t.device();
        s.cuda_generator_state = generator_state(device_generator(*s.cuda));
        break;
      }
    }
    s.cpu_autocast = at::autocast::is_cpu_enabled();
    s.cpu_dtype = at::autocast::get_autocast_cpu_dtype();
    s.gpu_autocast = at::autocast::is_enabled();
    s.gpu_dtype = at::autocast::get_autocast_gpu_dtype();
    return s;
  }
  static at::Generator device_generator(const c10::Device& d) {
    return at::globalContext().defaultGenerator(d);
  }
  static torch::Tensor generator_state(at::Generator g) {
    std::lock_guard<std::mutex> lock(g.mutex());
    return g.get_state();
  }
  static void set_generator_state(at::Generator g, const torch::Tensor& state) {
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_state(state);
  }
};

/// While alive: the generators and autocast as `recorded` had them; the state before comes back
/// at the end (training's generators go on as if nothing had been recomputed), and autocast's
/// cast cache is cleared when the outermost autocast scope ends, as AutocastScope does.
class Replay {
 public:
  explicit Replay(const RecordedState& recorded) : before_(RecordedState::now({})) {
    RecordedState::set_generator_state(at::detail::getDefaultCPUGenerator(),
                                       recorded.cpu_generator);
    if (recorded.cuda) {
      cuda_ = recorded.cuda;
      cuda_before_ = RecordedState::generator_state(RecordedState::device_generator(*cuda_));
      RecordedState::set_generator_state(RecordedState::device_generator(*cuda_),
                                         recorded.cuda_generator_state);
    }
    at::autocast::set_cpu_enabled(recorded.cpu_autocast);
    at::autocast::set_autocast_cpu_dtype(recorded.cpu_dtype);
    at::autocast::set_enabled(recorded.gpu_autocast);
    at::autocast::set_autocast_gpu_dtype(recorded.gpu_dtype);
    at::autocast::increment_nesting();
  }
  ~Replay() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(before_.cpu_autocast);
    at::autocast::set_autocast_cpu_dtype(before_.cpu_dtype);
    at::autocast::set_enabled(before_.gpu_autocast);
    at::autocast::set_autocast_gpu_dtype(before_.gpu_dtype);
    RecordedState::set_generator_state(at::detail::getDefaultCPUGenerator(), before_.cpu_generator);
    if (cuda_) {
      RecordedState::set_generator_state(RecordedState::device_generator(*cuda_), cuda_before_);
    }
  }
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

 private:
  RecordedState before_;
  std::optional<c10::Device> cuda_;
  torch::Tensor cuda_before_;
};

/// What backward needs besides the saved inputs: the function and the state to replay.
struct Recompute : torch::CustomClassHolder {
  TensorsFn fn;
  RecordedState state;
  std::vector<bool> input_needs_grad;
};

/// The autograd node of a checkpointed call. Its tensor inputs are an anchor that requires a
/// gradient (so that the outputs do even when no input does: the parameters inside `fn` need
/// their gradients) and the call's inputs.
struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& /*anchor*/,
                               at::TensorList inputs,
                               const c10::intrusive_ptr<Recompute>& recompute) {
    recompute->state = RecordedState::now(inputs);
    for (const auto& t : inputs) {
      recompute->input_needs_grad.push_back(t.defined() && t.requires_grad());
    }
    variable_list outputs = recompute->fn(inputs.vec());  // grad is off in a Function's forward
    for (const auto& t : outputs) {
      if (t.defined() && !(t.is_floating_point() || t.is_complex())) {
        ctx->mark_non_differentiable({t});
      }
    }
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["recompute"] = c10::IValue::make_capsule(recompute);
    return outputs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto recompute =
        c10::static_intrusive_pointer_cast<Recompute>(ctx->saved_data["recompute"].toCapsule());
    variable_list inputs;
    for (const auto& saved : ctx->get_saved_variables()) {
      const size_t i = inputs.size();
      inputs.push_back(saved.defined() ? saved.detach() : saved);
      if (recompute->input_needs_grad[i]) inputs.back().requires_grad_(true);
    }
    variable_list outputs;
    {
      Replay replay(recompute->state);
      torch::AutoGradMode grad(true);
      outputs = recompute->fn(inputs);
    }
    variable_list roots, grads;
    for (size_t i = 0; i < outputs.size() && i < grad_outputs.size(); ++i) {
      if (outputs[i].defined() && outputs[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(outputs[i]);
        grads.push_back(grad_outputs[i]);
      }
    }
    if (!roots.empty()) torch::autograd::backward(roots, grads);
    variable_list input_grads{torch::Tensor()};  // the anchor's
    for (const auto& t : inputs) {
      input_grads.push_back(t.defined() && t.requires_grad() ? t.grad() : torch::Tensor());
    }
    input_grads.emplace_back();  // the recompute argument's (not a tensor)
    return input_grads;
  }
};

}  // namespace

std::vector<torch::Tensor> checkpointed(const TensorsFn& fn,
                                        const std::vector<torch::Tensor>& inputs) {
  if (!torch::GradMode::is_enabled()) return fn(inputs);
  auto recompute = c10::make_intrusive<Recompute>();
  recompute->fn = fn;
  static const torch::Tensor anchor = torch::empty({0}).requires_grad_(true);
  // (A TensorList: the inputs become the node's inputs; a vector would be passed as data.)
  return CheckpointFunction::apply(anchor, at::TensorList(inputs), recompute);
}

torch::Tensor checkpointed(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                           const torch::Tensor& input) {
  // `fn` is copied: backward calls it after this call has returned.
  return checkpointed([fn](const std::vector<torch::Tensor>& in) { return std::vector{fn(in[0])}; },
                      {input})[0];
}

std::vector<torch::Tensor> Model::run_unit(size_t unit, const TensorsFn& fn,
                                           const std::vector<torch::Tensor>& inputs,
                                           bool recompute) {
  if (!unit_runner_) return recompute ? checkpointed(fn, inputs) : fn(inputs);
  if (!recompute) return unit_runner_->run(unit, fn, inputs);
  // The runner's unit around a recomputing one: backward gathers (ZeRO stage 3) before the
  // recomputation runs.
  return unit_runner_->run(
      unit, [fn](const std::vector<torch::Tensor>& in) { return checkpointed(fn, in); }, inputs);
}

torch::Tensor Model::run_unit(size_t unit,
                              const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                              const torch::Tensor& input, bool recompute) {
  return run_unit(
      unit, [fn](const std::vector<torch::Tensor>& in) { return std::vector{fn(in[0])}; }, {input},
      recompute)[0];
}

}  // namespace unitrain
