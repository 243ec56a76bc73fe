// The built-in optimizers: LibTorch's six, with args mirroring their Options (LibTorch 1.13),
// and the checkpoint state serializers of those whose state PyTorch's layout describes.
#include <torch/torch.h>

#include <mutex>
#include <optional>

#include "unitrain/core/optimizer_state_serializer.h"
#include "unitrain/optim/fused_adam.h"
#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

namespace topt = torch::optim;
using topt::OptimizerParamGroup;
using Groups = std::vector<OptimizerParamGroup>;

/// Gives each group a copy of `defaults`, with weight_decay 0 in the no-decay group.
template <typename TorchOptions>
Groups with_options(Groups groups, const TorchOptions& defaults) {
  for (size_t i = 0; i < groups.size(); ++i) {
    TorchOptions options = defaults;
    if (i == no_decay_group_index()) options.weight_decay(0);
    groups[i].set_options(std::make_unique<TorchOptions>(options));
  }
  return groups;
}

constexpr const char* kL2Penalty = "L2 penalty added to the gradient";

/// The `weight_decay` of an optimizer's args T (all but lbfgs have one).
template <typename T>
void declare_weight_decay(Options<T>& args, const char* help = kL2Penalty) {
  args.field("weight_decay", &T::weight_decay).min(0).help(help);
}

/// The `eps` of an optimizer's args T (adam, adamw, adagrad, rmsprop).
template <typename T>
void declare_eps(Options<T>& args) {
  args.field("eps", &T::eps).min(0).help("added to the denominator for stability");
}

/// The args of adam and adamw (their weight decays differ in default and meaning).
struct AdamArgs {
  std::vector<double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool fused = true;
};

Options<AdamArgs> adam_args(double weight_decay, const char* decay_help) {
  AdamArgs defaults;
  defaults.weight_decay = weight_decay;
  Options<AdamArgs> args(defaults);
  args.field("betas", &AdamArgs::betas)
      .help("[beta1, beta2]: decay rates of the moment estimates, each in [0, 1)");
  declare_eps(args);
  declare_weight_decay(args, decay_help);
  args.field("amsgrad", &AdamArgs::amsgrad)
      .help("use the maximum of past squared gradients (AMSGrad)");
  args.field("fused", &AdamArgs::fused)
      .help(
          "step each float32 CPU parameter in one pass over its memory, and on a GPU (LibTorch "
          "2.x) all parameters through LibTorch's fused multi-tensor kernel (same algorithm and "
          "state; equal to LibTorch's to float rounding); false = LibTorch's step, op by op");
  args.check([](AdamArgs& a, const Config& c) {
    UT_CHECK(a.betas.size() == 2, c.key_path("betas"), " must be two numbers [beta1, beta2], got ",
             a.betas.size(), " value(s)");
    for (double b : a.betas) {
      UT_CHECK(b >= 0 && b < 1, c.key_path("betas"), " values must be in [0, 1), got ", b);
    }
  });
  return args;
}

template <typename Optimizer, typename Fused, typename TorchOptions>
OptimizerPtr make_adam(const AdamArgs& a, Groups groups, double lr) {
  TorchOptions o(lr);
  o.betas({a.betas[0], a.betas[1]}).eps(a.eps).weight_decay(a.weight_decay).amsgrad(a.amsgrad);
  if (a.fused) return std::make_unique<Fused>(with_options(std::move(groups), o), o);
  return std::make_unique<Optimizer>(with_options(std::move(groups), o), o);
}

/// Adam's and AdamW's checkpoint state (their states and options have the same fields).
template <typename Optimizer, typename State, typename TorchOptions>
void register_adam_state(const std::string& type) {
  register_optimizer_state<Optimizer, State, TorchOptions>(
      type,
      [](auto& s, auto& io) {
        io.integer("step", s.step());
        io.tensor("exp_avg", s.exp_avg());
        io.tensor("exp_avg_sq", s.exp_avg_sq());
        io.optional_tensor("max_exp_avg_sq", s.max_exp_avg_sq());
      },
      [](auto& o, auto& io) {
        io.real("lr", o.lr());
        io.pair("betas", o.betas());
        io.real("eps", o.eps());
        io.real("weight_decay", o.weight_decay());
        io.flag("amsgrad", o.amsgrad());
      });
}

struct SgdArgs {
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

void register_sgd() {
  Options<SgdArgs> args;
  args.field("momentum", &SgdArgs::momentum).min(0).help("momentum factor (0 = plain SGD)");
  args.field("dampening", &SgdArgs::dampening).min(0).max(1).help("dampening of the momentum");
  declare_weight_decay(args);
  args.field("nesterov", &SgdArgs::nesterov)
      .help("Nesterov momentum (needs momentum > 0, dampening 0)");
  args.check([](SgdArgs& a, const Config& c) {
    UT_CHECK(!a.nesterov || (a.momentum > 0 && a.dampening == 0), c.key_path("nesterov"),
             ": Nesterov momentum needs momentum > 0 and dampening 0, got momentum ", a.momentum,
             " and dampening ", a.dampening, "; set ", c.key_path("momentum"),
             " (e.g. 0.9) or nesterov: false");
  });
  optimizer_registry().add(
      "sgd", "stochastic gradient descent with momentum (torch::optim::SGD)", std::move(args),
      [](const SgdArgs& a, Groups groups, double lr) -> OptimizerPtr {
        topt::SGDOptions o(lr);
        o.momentum(a.momentum).dampening(a.dampening).weight_decay(a.weight_decay);
        o.nesterov(a.nesterov);
        return std::make_unique<topt::SGD>(with_options(std::move(groups), o), o);
      });
  register_optimizer_state<topt::SGD, topt::SGDParamState, topt::SGDOptions>(
      "sgd", [](auto& s, auto& io) { io.tensor("momentum_buffer", s.momentum_buffer()); },
      [](auto& o, auto& io) {
        io.real("lr", o.lr());
        io.real("momentum", o.momentum());
        io.real("dampening", o.dampening());
        io.real("weight_decay", o.weight_decay());
        io.flag("nesterov", o.nesterov());
      });
}

void register_adam() {
  optimizer_registry().add("adam", "Adam (torch::optim::Adam, fused on the CPU and on GPUs)",
                           adam_args(0.0, kL2Penalty),
                           make_adam<topt::Adam, FusedAdam, topt::AdamOptions>);
  register_adam_state<topt::Adam, topt::AdamParamState, topt::AdamOptions>("adam");
  optimizer_registry().add(
      "adamw",
      "Adam with decoupled weight decay (torch::optim::AdamW, fused on the CPU and on GPUs)",
      adam_args(0.01, "decoupled weight decay (parameters shrink by lr * weight_decay)"),
      make_adam<topt::AdamW, FusedAdamW, topt::AdamWOptions>);
  register_adam_state<topt::AdamW, topt::AdamWParamState, topt::AdamWOptions>("adamw");
}

struct AdagradArgs {
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
};

void register_adagrad() {
  Options<AdagradArgs> args;
  args.field("lr_decay", &AdagradArgs::lr_decay).min(0).help("lr / (1 + (step - 1) * lr_decay)");
  declare_weight_decay(args);
  args.field("initial_accumulator_value", &AdagradArgs::initial_accumulator_value)
      .min(0)
      .help("initial sum of squared gradients");
  declare_eps(args);
  optimizer_registry().add("adagrad", "Adagrad (torch::optim::Adagrad)", std::move(args),
                           [](const AdagradArgs& a, Groups groups, double lr) -> OptimizerPtr {
                             topt::AdagradOptions o(lr);
                             o.lr_decay(a.lr_decay).weight_decay(a.weight_decay);
                             o.initial_accumulator_value(a.initial_accumulator_value).eps(a.eps);
                             return std::make_unique<topt::Adagrad>(
                                 with_options(std::move(groups), o), o);
                           });
  register_optimizer_state<topt::Adagrad, topt::AdagradParamState, topt::AdagradOptions>(
      "adagrad",
      [](auto& s, auto& io) {
        io.integer("step", s.step());
        io.tensor("sum", s.sum());
      },
      [](auto& o, auto& io) {
        io.real("lr", o.lr());
        io.real("lr_decay", o.lr_decay());
        io.real("weight_decay", o.weight_decay());
        io.real("initial_accumulator_value", o.initial_accumulator_value());
        io.real("eps", o.eps());
      },
      // Adagrad makes its state when built (and its steps assume it).
      [](const torch::Tensor& p, const topt::AdagradOptions& o) {
        auto state = std::make_unique<topt::AdagradParamState>();
        state->step(0);
        state->sum(torch::full_like(p.detach(), o.initial_accumulator_value()));
        return state;
      });
}

struct RmspropArgs {
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
};

void register_rmsprop() {
  Options<RmspropArgs> args;
  args.field("alpha", &RmspropArgs::alpha)
      .min(0)
      .help("smoothing constant of the squared-gradient average");
  declare_eps(args);
  declare_weight_decay(args);
  args.field("momentum", &RmspropArgs::momentum).min(0).help("momentum factor");
  args.field("centered", &RmspropArgs::centered)
      .help("normalise by the estimated gradient variance");
  optimizer_registry().add(
      "rmsprop", "RMSprop (torch::optim::RMSprop)", std::move(args),
      [](const RmspropArgs& a, Groups groups, double lr) -> OptimizerPtr {
        topt::RMSpropOptions o(lr);
        o.alpha(a.alpha).eps(a.eps).weight_decay(a.weight_decay).momentum(a.momentum);
        o.centered(a.centered);
        return std::make_unique<topt::RMSprop>(with_options(std::move(groups), o), o);
      });
  register_optimizer_state<topt::RMSprop, topt::RMSpropParamState, topt::RMSpropOptions>(
      "rmsprop",
      [](auto& s, auto& io) {
        io.integer("step", s.step());
        io.tensor("square_avg", s.square_avg());
        io.optional_tensor("momentum_buffer", s.momentum_buffer());
        io.optional_tensor("grad_avg", s.grad_avg());
      },
      [](auto& o, auto& io) {
        io.real("lr", o.lr());
        io.real("alpha", o.alpha());
        io.real("eps", o.eps());
        io.real("weight_decay", o.weight_decay());
        io.real("momentum", o.momentum());
        io.flag("centered", o.centered());
      });
}

struct LbfgsArgs {
  int64_t max_iter = 20;
  std::optional<int64_t> max_eval;  ///< null: max_iter * 5 / 4
  double tolerance_grad = 1e-7;
  double tolerance_change = 1e-9;
  int64_t history_size = 100;
  bool strong_wolfe = false;
};

void register_lbfgs() {
  Options<LbfgsArgs> args;
  args.field("max_iter", &LbfgsArgs::max_iter).min(1).help("iterations per optimizer step");
  args.field("max_eval", &LbfgsArgs::max_eval)
      .min(1)
      .help("loss evaluations per step (null = max_iter * 5 / 4)");
  args.field("tolerance_grad", &LbfgsArgs::tolerance_grad)
      .min(0)
      .help("stop when the gradient's max-norm is below this");
  args.field("tolerance_change", &LbfgsArgs::tolerance_change)
      .min(0)
      .help("stop when loss or parameters change less than this");
  args.field("history_size", &LbfgsArgs::history_size).min(1).help("number of past updates kept");
  args.field("line_search_fn", &LbfgsArgs::strong_wolfe, {{"none", false}, {"strong_wolfe", true}})
      .help("line search");
  optimizer_registry().add(
      "lbfgs", "L-BFGS; step() re-evaluates the loss through a closure (torch::optim::LBFGS)",
      std::move(args), [](const LbfgsArgs& a, Groups groups, double lr) -> OptimizerPtr {
        topt::LBFGSOptions o(lr);
        o.max_iter(a.max_iter).tolerance_grad(a.tolerance_grad);
        o.tolerance_change(a.tolerance_change).history_size(a.history_size);
        if (a.max_eval) o.max_eval(*a.max_eval);
        if (a.strong_wolfe) o.line_search_fn("strong_wolfe");
        // LBFGS takes a single group and has no weight decay: merge the groups.
        std::vector<torch::Tensor> params;
        for (const auto& g : groups)
          params.insert(params.end(), g.params().begin(), g.params().end());
        return std::make_unique<topt::LBFGS>(std::move(params), o);
      });
  declare_needs_closure<topt::LBFGS>();
}

}  // namespace

void register_builtin_optimizers() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_sgd();
    register_adam();
    register_adagrad();
    register_rmsprop();
    register_lbfgs();
  });
}

}  // namespace unitrain
