#pragma once
// Optimizers from the config: every optimizer LibTorch has, with parameter groups.
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "unitrain/core/registry.h"

namespace unitrain {

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_optimizers();

using OptimizerPtr = std::unique_ptr<torch::optim::Optimizer>;

/// Registered optimizers (`optimizer.type`): sgd, adam, adamw, adagrad, rmsprop, lbfgs.
/// The factory gets the resolved `optimizer.args`, the base learning rate and the parameter
/// groups; each group's own weight decay (0 for the no-decay group) is applied by the factory.
Registry<OptimizerPtr, std::vector<torch::optim::OptimizerParamGroup>, double>&
optimizer_registry();

/// The parameters to optimise (those with requires_grad), split in two groups when
/// `no_decay_bias_norm` is true: weights (decayed) and biases plus 1-d parameters such as norm
/// scales (weight decay 0). When false, every parameter is in `decay`.
struct ParamGroups {
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> no_decay;
};
ParamGroups split_params(const torch::nn::Module& module, bool no_decay_bias_norm);

/// The optimizer factories get one group (all parameters) or, with `no_decay_bias_norm`, two:
/// the decayed group first and the no-decay group at this index, possibly empty. A factory
/// gives the no-decay group weight_decay 0 and every group the base lr.
constexpr size_t no_decay_group_index() { return 1; }

/// Builds the optimizer of the `optimizer` section for `module`'s trainable parameters. The
/// section is resolved against optimizer_section_schema() first (a raw section works too), so
/// a bad value is a ConfigError naming its key, e.g. `optimizer.lr must be > 0, got -1`.
OptimizerPtr build_optimizer(const Config& optimizer_section, const torch::nn::Module& module);

/// Declares, where an optimizer registers, that optimizers of C++ type T re-evaluate the loss
/// inside step(): the step runner then passes them a closure (forward and backward again), and
/// data-parallel training refuses them. lbfgs declares torch::optim::LBFGS; a plugin's:
///   optimizer_registry().add("mine", ...);  declare_needs_closure<MyOptimizer>();
/// (Optimizers of type T and its subclasses.)
void declare_needs_closure(std::function<bool(const torch::optim::Optimizer&)> is_of_type);
/// Whether an optimizer is a T or derives from one.
template <typename T>
std::function<bool(const torch::optim::Optimizer&)> optimizer_is() {
  static_assert(std::is_base_of_v<torch::optim::Optimizer, T>, "T must be an optimizer");
  return [](const torch::optim::Optimizer& o) { return dynamic_cast<const T*>(&o) != nullptr; };
}
template <typename T>
void declare_needs_closure() {
  declare_needs_closure(optimizer_is<T>());
}

/// True when `optimizer`'s type (or a base of it) was declared with declare_needs_closure();
/// torch::optim::LBFGS is declared from the start: so also for one a
/// Trainer::configure_optimizer override built itself.
bool needs_closure(const torch::optim::Optimizer& optimizer);

/// A step that train.cuda_graphs captures: device work alone, with what changes between steps
/// (the step count, each group's learning rate) in device tensors that prepare() sets before
/// each run of step() (outside a capture), so that nothing a replay runs was fixed when it was
/// captured. GraphedAdam (optim/fused_adam.h) is adam's and adamw's.
class CapturedStep {
 public:
  virtual ~CapturedStep() = default;
  virtual void prepare() = 0;
  virtual void step() = 0;
};

/// How train.cuda_graphs captures the step of optimizers of one type, declared where the
/// optimizer registers, as a closure is (declare_needs_closure):
///   declare_capturable(optimizer_is<MyOptimizer>(), {refusal, has_state, make});
struct StepCapture {
  /// Why the optimizer's step cannot be captured, from its type and options alone (before it
  /// has a state): e.g. an option the captured step lacks; "" when it can.
  std::function<std::string(const torch::optim::Optimizer&)> refusal;
  /// Whether every parameter it trains has its state (the eager steps before a capture make it).
  std::function<bool(const torch::optim::Optimizer&)> has_state;
  /// Its captured step, once it has its state (ConfigError naming why it cannot be).
  std::function<std::unique_ptr<CapturedStep>(torch::optim::Optimizer&)> make;
};
void declare_capturable(std::function<bool(const torch::optim::Optimizer&)> is_of_type,
                        StepCapture capture);
/// The StepCapture declared for `optimizer`'s type (or a base of it); null when none was.
const StepCapture* capture_of(const torch::optim::Optimizer& optimizer);
/// Why train.cuda_graphs cannot capture `optimizer`'s step ("" when it can): its type declared
/// no StepCapture, or its StepCapture's refusal.
std::string capture_refusal(const torch::optim::Optimizer& optimizer);

/// Declares that optimizers of a type step each element alike wherever it falls in a flat
/// buffer, so that ZeRO 3's parts of any size give the same bits (distributed.reproducible's
/// promise under distributed.zero: 3); `refusal` says why one of them does not, from its
/// options ("" when it does). Declared where the optimizer registers, as a closure is;
/// FusedAdam and FusedAdamW (without amsgrad) are declared from the start.
void declare_elementwise_step(std::function<bool(const torch::optim::Optimizer&)> is_of_type,
                              std::function<std::string(const torch::optim::Optimizer&)> refusal);
/// Why `optimizer`'s step may round an element by where it falls in a part (its type declared
/// no elementwise step, or the declaration's refusal); "" when it keeps the promise.
std::string elementwise_step_refusal(const torch::optim::Optimizer& optimizer);

/// Reads/writes the learning rate of group `i` (every LibTorch optimizer's options have one).
double get_lr(const torch::optim::Optimizer& optimizer, size_t group = 0);
void set_lr(torch::optim::Optimizer& optimizer, size_t group, double lr);

/// The keys of the `optimizer` section besides `type` and `args` (lr, no_decay_bias_norm). The
/// whole section is declared in a parent schema as
///   `root.add("optimizer", Type::Section).component("optimizer", "adam")
///        .section(optimizer_section_schema())`
/// so `type` (default adam) names a registered optimizer and `args` is checked by its schema.
std::shared_ptr<const Schema> optimizer_section_schema();

}  // namespace unitrain
