// The built-in optimizers: LibTorch's six, with args mirroring their Options (LibTorch 1.13).
#include <torch/torch.h>

#include <mutex>

#include "unitrain/optim/optimizer.h"

namespace unitrain {
namespace {

using torch::optim::OptimizerParamGroup;
using Groups = std::vector<OptimizerParamGroup>;

/// Gives each group a copy of `defaults`, with weight_decay 0 in the no-decay group.
template <typename Options>
Groups with_options(Groups groups, const Options& defaults) {
  for (size_t i = 0; i < groups.size(); ++i) {
    Options options = defaults;
    if (i == no_decay_group_index()) options.weight_decay(0);
    groups[i].set_options(std::make_unique<Options>(options));
  }
  return groups;
}

std::tuple<double, double> read_betas(const Config& args) {
  const auto betas = args.get_double_list("betas");
  UT_CHECK(betas.size() == 2, args.key_path("betas"), " must be two numbers [beta1, beta2], got ",
           betas.size(), " value(s)");
  for (double b : betas) {
    UT_CHECK(b >= 0 && b < 1, args.key_path("betas"), " values must be in [0, 1), got ", b);
  }
  return {betas[0], betas[1]};
}

void add_adam_fields(Schema& s, double weight_decay, const char* decay_help) {
  s.add("betas", Type::FloatList)
      .def("[0.9, 0.999]")
      .help("[beta1, beta2]: decay rates of the moment estimates, each in [0, 1)");
  s.add("eps", Type::Float).def(1e-8).min(0).help("added to the denominator for stability");
  s.add("weight_decay", Type::Float).def(weight_decay).min(0).help(decay_help);
  s.add("amsgrad", Type::Bool)
      .def(false)
      .help("use the maximum of past squared gradients (AMSGrad)");
}

template <typename Optimizer, typename Options>
OptimizerPtr make_adam(const Config& args, Groups groups, double lr) {
  Options o(lr);
  o.betas(read_betas(args))
      .eps(args.get_double("eps"))
      .weight_decay(args.get_double("weight_decay"))
      .amsgrad(args.get_bool("amsgrad"));
  return std::make_unique<Optimizer>(with_options(std::move(groups), o), o);
}

void register_sgd() {
  Schema s;
  s.add("momentum", Type::Float).def(0.0).min(0).help("momentum factor (0 = plain SGD)");
  s.add("dampening", Type::Float).def(0.0).min(0).max(1).help("dampening of the momentum");
  s.add("weight_decay", Type::Float).def(0.0).min(0).help("L2 penalty added to the gradient");
  s.add("nesterov", Type::Bool)
      .def(false)
      .help("Nesterov momentum (needs momentum > 0, dampening 0)");
  optimizer_registry().add(
      "sgd", "stochastic gradient descent with momentum (torch::optim::SGD)", std::move(s),
      [](const Config& args, Groups groups, double lr) -> OptimizerPtr {
        const double momentum = args.get_double("momentum");
        const double dampening = args.get_double("dampening");
        const bool nesterov = args.get_bool("nesterov");
        UT_CHECK(!nesterov || (momentum > 0 && dampening == 0), args.key_path("nesterov"),
                 ": Nesterov momentum needs momentum > 0 and dampening 0, got momentum ", momentum,
                 " and dampening ", dampening, "; set ", args.key_path("momentum"),
                 " (e.g. 0.9) or nesterov: false");
        torch::optim::SGDOptions o(lr);
        o.momentum(momentum)
            .dampening(dampening)
            .weight_decay(args.get_double("weight_decay"))
            .nesterov(nesterov);
        return std::make_unique<torch::optim::SGD>(with_options(std::move(groups), o), o);
      });
}

void register_adam() {
  Schema adam;
  add_adam_fields(adam, 0.0, "L2 penalty added to the gradient");
  optimizer_registry().add("adam", "Adam (torch::optim::Adam)", std::move(adam),
                           make_adam<torch::optim::Adam, torch::optim::AdamOptions>);
  Schema adamw;
  add_adam_fields(adamw, 0.01, "decoupled weight decay (parameters shrink by lr * weight_decay)");
  optimizer_registry().add("adamw", "Adam with decoupled weight decay (torch::optim::AdamW)",
                           std::move(adamw),
                           make_adam<torch::optim::AdamW, torch::optim::AdamWOptions>);
}

void register_adagrad() {
  Schema s;
  s.add("lr_decay", Type::Float).def(0.0).min(0).help("lr / (1 + (step - 1) * lr_decay)");
  s.add("weight_decay", Type::Float).def(0.0).min(0).help("L2 penalty added to the gradient");
  s.add("initial_accumulator_value", Type::Float)
      .def(0.0)
      .min(0)
      .help("initial sum of squared gradients");
  s.add("eps", Type::Float).def(1e-10).min(0).help("added to the denominator for stability");
  optimizer_registry().add(
      "adagrad", "Adagrad (torch::optim::Adagrad)", std::move(s),
      [](const Config& args, Groups groups, double lr) -> OptimizerPtr {
        torch::optim::AdagradOptions o(lr);
        o.lr_decay(args.get_double("lr_decay"))
            .weight_decay(args.get_double("weight_decay"))
            .initial_accumulator_value(args.get_double("initial_accumulator_value"))
            .eps(args.get_double("eps"));
        return std::make_unique<torch::optim::Adagrad>(with_options(std::move(groups), o), o);
      });
}

void register_rmsprop() {
  Schema s;
  s.add("alpha", Type::Float)
      .def(0.99)
      .min(0)
      .help("smoothing constant of the squared-gradient average");
  s.add("eps", Type::Float).def(1e-8).min(0).help("added to the denominator for stability");
  s.add("weight_decay", Type::Float).def(0.0).min(0).help("L2 penalty added to the gradient");
  s.add("momentum", Type::Float).def(0.0).min(0).help("momentum factor");
  s.add("centered", Type::Bool).def(false).help("normalise by the estimated gradient variance");
  optimizer_registry().add("rmsprop", "RMSprop (torch::optim::RMSprop)", std::move(s),
                           [](const Config& args, Groups groups, double lr) -> OptimizerPtr {
                             torch::optim::RMSpropOptions o(lr);
                             o.alpha(args.get_double("alpha"))
                                 .eps(args.get_double("eps"))
                                 .weight_decay(args.get_double("weight_decay"))
                                 .momentum(args.get_double("momentum"))
                                 .centered(args.get_bool("centered"));
                             return std::make_unique<torch::optim::RMSprop>(
                                 with_options(std::move(groups), o), o);
                           });
}

void register_lbfgs() {
  Schema s;
  s.add("max_iter", Type::Int).def(20).min(1).help("iterations per optimizer step");
  s.add("max_eval", Type::Int)
      .nullable()
      .min(1)
      .help("loss evaluations per step (null = max_iter * 5 / 4)");
  s.add("tolerance_grad", Type::Float)
      .def(1e-7)
      .min(0)
      .help("stop when the gradient's max-norm is below this");
  s.add("tolerance_change", Type::Float)
      .def(1e-9)
      .min(0)
      .help("stop when loss or parameters change less than this");
  s.add("history_size", Type::Int).def(100).min(1).help("number of past updates kept");
  s.add("line_search_fn", Type::String)
      .def("none")
      .choices({"none", "strong_wolfe"})
      .help("line search");
  optimizer_registry().add(
      "lbfgs", "L-BFGS; step() re-evaluates the loss through a closure (torch::optim::LBFGS)",
      std::move(s), [](const Config& args, Groups groups, double lr) -> OptimizerPtr {
        torch::optim::LBFGSOptions o(lr);
        o.max_iter(args.get_int("max_iter"))
            .tolerance_grad(args.get_double("tolerance_grad"))
            .tolerance_change(args.get_double("tolerance_change"))
            .history_size(args.get_int("history_size"));
        if (args.has("max_eval")) o.max_eval(args.get_int("max_eval"));
        if (args.get_string("line_search_fn") != "none") o.line_search_fn("strong_wolfe");
        // LBFGS takes a single group and has no weight decay: merge the groups.
        std::vector<torch::Tensor> params;
        for (const auto& g : groups)
          params.insert(params.end(), g.params().begin(), g.params().end());
        return std::make_unique<torch::optim::LBFGS>(std::move(params), o);
      });
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
