#include "unitrain/optim/fused_adam.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <memory>
#include <optional>

#include "unitrain/compat/fused_adam_kernel.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

/// One parameter's step constants, in float as LibTorch's kernels apply them.
struct AdamStep {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias_correction2_sqrt;  ///< sqrt(1 - beta2^t)
  float eps;
  float neg_step_size;  ///< -lr / (1 - beta1^t)
  float l2;             ///< Adam's weight decay, added to the gradient (0: none)
  float decay;          ///< AdamW's factor 1 - lr * weight_decay on the parameter (1: none)
};

// Every element is independent: any split into chunks gives the same bits. Each operation is
// rounded on its own (CMakeLists.txt compiles this file with -ffp-contract=off and
// -fno-math-errno), in any of the clones.
template <bool kL2, bool kDecay>
__attribute__((target_clones("avx512f", "avx2", "default"))) void adam_chunk(
    float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
    int64_t n, const AdamStep& step) {
  // Constants in locals: the stores below cannot change them, so the loop vectorises.
  const float beta1 = step.beta1, one_minus_beta1 = step.one_minus_beta1;
  const float beta2 = step.beta2, one_minus_beta2 = step.one_minus_beta2;
  const float bias_correction2_sqrt = step.bias_correction2_sqrt, eps = step.eps;
  const float neg_step_size = step.neg_step_size, l2 = step.l2, decay = step.decay;
  for (int64_t i = 0; i < n; ++i) {
    float grad = g[i];
    float param = p[i];
    if (kL2) grad = grad + l2 * param;
    if (kDecay) param = param * decay;
    const float mi = m[i] * beta1 + one_minus_beta1 * grad;
    const float vi = v[i] * beta2 + one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / bias_correction2_sqrt + eps;
    p[i] = param + neg_step_size * mi / denom;
  }
}

void adam_update(torch::Tensor& p, const torch::Tensor& grad, torch::Tensor& m, torch::Tensor& v,
                 const AdamStep& s) {
  float* pp = p.data_ptr<float>();
  const float* gp = grad.data_ptr<float>();
  float* mp = m.data_ptr<float>();
  float* vp = v.data_ptr<float>();
  const bool l2 = s.l2 != 0, decay = s.decay != 1;
  at::parallel_for(0, p.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    if (l2 && decay)
      adam_chunk<true, true>(pp + begin, gp + begin, mp + begin, vp + begin, n, s);
    else if (l2)
      adam_chunk<true, false>(pp + begin, gp + begin, mp + begin, vp + begin, n, s);
    else if (decay)
      adam_chunk<false, true>(pp + begin, gp + begin, mp + begin, vp + begin, n, s);
    else
      adam_chunk<false, false>(pp + begin, gp + begin, mp + begin, vp + begin, n, s);
  });
}

bool fusable(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.is_contiguous() && !t.is_sparse();
}

/// True when every parameter with a gradient (and its state, when it has one) can take the
/// fused step.
template <typename Options, typename State>
bool all_fusable(const std::vector<torch::optim::OptimizerParamGroup>& groups,
                 const OptimizerStateMap& state) {
  for (const auto& group : groups) {
    if (static_cast<const Options&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!fusable(p) || !fusable(p.grad())) return false;
      auto it = state.find(optimizer_state_key(p));
      if (it == state.end()) continue;
      const auto& s = static_cast<const State&>(*it->second);
      if (!fusable(s.exp_avg()) || !fusable(s.exp_avg_sq())) return false;
    }
  }
  return true;
}

/// `p`'s state, made as LibTorch makes it (step 0, zero moments) when it has none.
template <typename State>
State& state_of(OptimizerStateMap& state, const torch::Tensor& p) {
  const auto key = optimizer_state_key(p);
  auto it = state.find(key);
  if (it == state.end()) {
    auto s = std::make_unique<State>();
    s->step(0);
    s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    it = state.emplace(key, std::move(s)).first;
  }
  return static_cast<State&>(*it->second);
}

/// The fused step over every group of an Adam-like optimizer; `decoupled`: AdamW's decay.
template <typename Options, typename State>
void fused_step(std::vector<torch::optim::OptimizerParamGroup>& groups, OptimizerStateMap& state,
                bool decoupled) {
  torch::NoGradGuard no_grad;
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = state_of<State>(state, p);
      s.step(s.step() + 1);
      const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
      const double bias_correction1 = 1 - std::pow(beta1, s.step());
      const double bias_correction2 = 1 - std::pow(beta2, s.step());
      AdamStep k;
      k.beta1 = static_cast<float>(beta1);
      k.one_minus_beta1 = static_cast<float>(1 - beta1);
      k.beta2 = static_cast<float>(beta2);
      k.one_minus_beta2 = static_cast<float>(1 - beta2);
      k.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
      k.eps = static_cast<float>(o.eps());
      k.neg_step_size = static_cast<float>(-(o.lr() / bias_correction1));
      k.l2 = decoupled ? 0.f : static_cast<float>(o.weight_decay());
      k.decay = decoupled && o.weight_decay() != 0
                    ? static_cast<float>(1 - o.lr() * o.weight_decay())
                    : 1.f;
      adam_update(p, p.grad(), s.exp_avg(), s.exp_avg_sq(), k);
    }
  }
}

/// True when every parameter with a gradient is on one GPU, it, its gradient and its state all
/// contiguous and of one floating dtype, every group without amsgrad, and the states' steps
/// equal (they are unless a parameter was added to a group later): LibTorch 2.x's multi-tensor
/// kernel then takes the step.
template <typename Options, typename State>
bool kernel_fusable(const std::vector<torch::optim::OptimizerParamGroup>& groups,
                    const OptimizerStateMap& state) {
  if (!has_fused_adam_kernel()) return false;
  std::optional<torch::Device> device;
  std::optional<torch::ScalarType> dtype;
  std::optional<int64_t> step;
  bool any = false;
  // The kernel takes dense tensors of one device and one dtype (it dispatches on the first).
  auto same = [&](const torch::Tensor& t) {
    return !t.is_sparse() && t.device() == *device && t.scalar_type() == *dtype &&
           t.is_contiguous();
  };
  for (const auto& group : groups) {
    if (static_cast<const Options&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      const torch::Tensor& g = p.grad();
      if (!g.defined()) continue;
      any = true;
      if (!p.is_cuda() || !torch::isFloatingType(p.scalar_type())) return false;
      if (!device) {
        device = p.device();
        dtype = p.scalar_type();
      }
      if (!same(p) || !same(g)) return false;
      auto it = state.find(optimizer_state_key(p));
      const int64_t s = it == state.end() ? 0 : static_cast<const State&>(*it->second).step();
      if (step && *step != s) return false;
      step = s;
      if (it == state.end()) continue;
      const auto& st = static_cast<const State&>(*it->second);
      if (!same(st.exp_avg()) || !same(st.exp_avg_sq())) return false;
    }
  }
  return any;
}

/// The step of every group through LibTorch 2.x's fused kernel (kernel_fusable()): the same
/// state as LibTorch's own step (AdamParamState: an integer step, both moments).
template <typename Options, typename State>
void kernel_step(std::vector<torch::optim::OptimizerParamGroup>& groups, OptimizerStateMap& state,
                 bool decoupled) {
  torch::NoGradGuard no_grad;
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    int64_t step = 0;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = state_of<State>(state, p);
      s.step(s.step() + 1);
      step = s.step();
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
    }
    if (params.empty()) continue;
    fused_adam_kernel(params, grads, exp_avgs, exp_avg_sqs,
                      torch::full({}, static_cast<double>(step),
                                  torch::TensorOptions(torch::kFloat32).device(params[0].device())),
                      o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                      o.eps(), decoupled);
  }
}

torch::Tensor closure_loss(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

/// The step of Adam-like `Torch` (Adam or AdamW; `decoupled`: AdamW's decay): fused when every
/// parameter can be, else `Torch`'s own.
template <typename Torch, typename Options, typename State>
torch::Tensor step_of(Torch& optimizer, const torch::optim::Optimizer::LossClosure& closure,
                      bool decoupled) {
  torch::Tensor loss = closure_loss(closure);
  if (all_fusable<Options, State>(optimizer.param_groups(), optimizer.state())) {
    fused_step<Options, State>(optimizer.param_groups(), optimizer.state(), decoupled);
  } else if (kernel_fusable<Options, State>(optimizer.param_groups(), optimizer.state())) {
    kernel_step<Options, State>(optimizer.param_groups(), optimizer.state(), decoupled);
  } else {
    return optimizer.Torch::step([loss] { return loss; });
  }
  return loss;
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  using namespace torch::optim;
  return step_of<Adam, AdamOptions, AdamParamState>(*this, closure, /*decoupled=*/false);
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  using namespace torch::optim;
  return step_of<AdamW, AdamWOptions, AdamWParamState>(*this, closure, /*decoupled=*/true);
}

namespace {

/// Adam's or AdamW's options of `group` (`decoupled`: AdamW's), as the kernel takes them.
struct KernelOptions {
  double lr, beta1, beta2, weight_decay, eps;
  bool amsgrad;
};

KernelOptions kernel_options(const torch::optim::OptimizerParamGroup& group, bool decoupled) {
  if (decoupled) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    return {o.lr(),     std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(),
            o.amsgrad()};
  }
  const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
  return {o.lr(),     std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(),
          o.amsgrad()};
}

/// Whether `optimizer` is an AdamW (true), an Adam (false), or neither (nullopt).
std::optional<bool> adam_kind(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return true;
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return false;
  return std::nullopt;
}

}  // namespace

std::string GraphedAdam::refusal(const torch::optim::Optimizer& optimizer) {
  const std::optional<bool> decoupled = adam_kind(optimizer);
  if (!decoupled) return "its optimizer is not adam or adamw (the optimizer a graph steps)";
  if (!has_fused_adam_tensor_lr()) {
    return std::string("LibTorch ") + TORCH_VERSION +
           " has no fused Adam kernel that reads its learning rate from the device (2.4 has)";
  }
  for (const auto& group : optimizer.param_groups()) {
    if (kernel_options(group, *decoupled).amsgrad) return "its optimizer uses amsgrad";
  }
  return "";
}

bool GraphedAdam::has_state(const torch::optim::Optimizer& optimizer) {
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (optimizer.state().count(optimizer_state_key(p)) == 0) return false;
    }
  }
  return true;
}

StepCapture adam_step_capture() {
  StepCapture c;
  c.refusal = [](const torch::optim::Optimizer& o) { return GraphedAdam::refusal(o); };
  c.has_state = [](const torch::optim::Optimizer& o) { return GraphedAdam::has_state(o); };
  c.make = [](torch::optim::Optimizer& o) -> std::unique_ptr<CapturedStep> {
    return std::make_unique<GraphedAdam>(o);
  };
  return c;
}

GraphedAdam::GraphedAdam(torch::optim::Optimizer& optimizer) : optimizer_(optimizer) {
  const std::string why = refusal(optimizer);
  if (!why.empty()) throw ConfigError("train.cuda_graphs: " + why);
  decoupled_ = *adam_kind(optimizer);
  std::optional<torch::Device> device;
  std::optional<torch::ScalarType> dtype;
  std::optional<int64_t> steps;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      auto it = optimizer.state().find(optimizer_state_key(p));
      UT_CHECK(it != optimizer.state().end(), "train.cuda_graphs: a parameter of shape ", p.sizes(),
               " has no optimizer state after the eager steps (it got no gradient); "
               "every parameter the optimizer trains must take part in every step");
      const auto& st = static_cast<const torch::optim::AdamParamState&>(*it->second);
      if (!device) {
        device = p.device();
        dtype = p.scalar_type();
        steps = st.step();
      }
      for (const torch::Tensor& t : {p, st.exp_avg(), st.exp_avg_sq()}) {
        UT_CHECK(t.device() == *device && t.scalar_type() == *dtype && t.is_contiguous(),
                 "train.cuda_graphs: the fused kernel steps contiguous parameters of one device "
                 "and one dtype; a parameter of shape ",
                 p.sizes(), " is ", t.scalar_type(), " on ", t.device(),
                 t.is_contiguous() ? "" : ", not contiguous");
      }
      UT_CHECK(st.step() == *steps, "train.cuda_graphs: the parameters' step counts differ (",
               st.step(), " and ", *steps, "): a parameter joined a group late");
    }
  }
  UT_CHECK(device.has_value(), "train.cuda_graphs: the optimizer trains no parameter");
  const auto on_device = torch::TensorOptions(torch::kFloat32).device(*device);
  step_ = torch::zeros({}, on_device);
  for (size_t i = 0; i < optimizer.param_groups().size(); ++i) {
    lr_.push_back(torch::zeros({}, on_device));
  }
}

void GraphedAdam::prepare() {
  torch::NoGradGuard no_grad;
  int64_t step = 0;
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    for (const auto& p : groups[i].params()) {
      auto& s = static_cast<torch::optim::AdamParamState&>(
          *optimizer_.state().at(optimizer_state_key(p)));
      s.step(s.step() + 1);
      step = s.step();
    }
    lr_[i].fill_(kernel_options(groups[i], decoupled_).lr);
  }
  step_.fill_(static_cast<double>(step));
}

void GraphedAdam::step() {
  torch::NoGradGuard no_grad;
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    for (const auto& p : groups[i].params()) {
      UT_CHECK(p.grad().defined(), "train.cuda_graphs: a parameter of shape ", p.sizes(),
               " got no gradient in this step; every parameter the optimizer trains must take "
               "part in every step");
      auto& s = static_cast<torch::optim::AdamParamState&>(
          *optimizer_.state().at(optimizer_state_key(p)));
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
    }
    if (params.empty()) continue;
    const KernelOptions o = kernel_options(groups[i], decoupled_);
    fused_adam_kernel(params, grads, exp_avgs, exp_avg_sqs, step_, lr_[i], o.beta1, o.beta2,
                      o.weight_decay, o.eps, decoupled_);
  }
}

}  // namespace unitrain
