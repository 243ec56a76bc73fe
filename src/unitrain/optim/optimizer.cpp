#include "unitrain/optim/optimizer.h"

#include <torch/torch.h>

#include <list>
#include <mutex>

#include "unitrain/optim/component_section.h"
#include "unitrain/optim/fused_adam.h"

namespace unitrain {
namespace {

bool is_bias_name(const std::string& name) {
  static const std::string kBias = "bias";
  return name == kBias ||
         (name.size() > kBias.size() &&
          name.compare(name.size() - kBias.size() - 1, std::string::npos, "." + kBias) == 0);
}

const torch::optim::OptimizerParamGroup& group_at(const torch::optim::Optimizer& optimizer,
                                                  size_t group) {
  const auto& groups = optimizer.param_groups();
  UT_CHECK(group < groups.size(), "optimizer parameter group ", group, " does not exist (",
           groups.size(), " groups)");
  return groups[group];
}

/// The keys of the `optimizer` section besides `type` and `args`.
struct OptimizerSection {
  double lr = 1e-3;
  bool no_decay_bias_norm = false;

  static void declare(Options<OptimizerSection>& o) {
    o.field("lr", &OptimizerSection::lr)
        .gt(0)
        .free()
        .help("base learning rate (schedulers scale it)");
    o.field("no_decay_bias_norm", &OptimizerSection::no_decay_bias_norm)
        .help("biases and 1-d parameters (norm scales) get weight_decay 0");
  }
};

}  // namespace

Registry<OptimizerPtr, std::vector<torch::optim::OptimizerParamGroup>, double>&
optimizer_registry() {
  static Registry<OptimizerPtr, std::vector<torch::optim::OptimizerParamGroup>, double> registry(
      "optimizer");
  return registry;
}

ParamGroups split_params(const torch::nn::Module& module, bool no_decay_bias_norm) {
  ParamGroups groups;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad()) continue;
    const bool no_decay = no_decay_bias_norm && (is_bias_name(item.key()) || p.dim() <= 1);
    (no_decay ? groups.no_decay : groups.decay).push_back(p);
  }
  return groups;
}

OptimizerPtr build_optimizer(const Config& optimizer_section, const torch::nn::Module& module) {
  const Config section =
      resolve_component_section(optimizer_section, "optimizer", "adam", optimizer_section_schema());
  const OptimizerSection o = options_of<OptimizerSection>().read_resolved(section);
  const bool split = o.no_decay_bias_norm;
  ParamGroups params = split_params(module, split);
  UT_CHECK(!params.decay.empty() || !params.no_decay.empty(), section.path(),
           ": the model has no trainable parameters (none has requires_grad set)");
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::move(params.decay));
  if (split) groups.emplace_back(std::move(params.no_decay));
  return optimizer_registry().create(section, std::move(groups), o.lr);
}

namespace {

std::mutex closure_types_mutex;

/// What declare_needs_closure<T> declared: whether an optimizer is a T (or derives from one).
std::vector<std::function<bool(const torch::optim::Optimizer&)>>& closure_types() {
  // torch's own LBFGS from the start, whether or not lbfgs registered (for one a
  // Trainer::configure_optimizer override built itself, or a user's subclass of it).
  static std::vector<std::function<bool(const torch::optim::Optimizer&)>> types{
      optimizer_is<torch::optim::LBFGS>()};
  return types;
}

}  // namespace

void declare_needs_closure(std::function<bool(const torch::optim::Optimizer&)> is_of_type) {
  std::lock_guard<std::mutex> lock(closure_types_mutex);
  closure_types().push_back(std::move(is_of_type));
}

bool needs_closure(const torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(closure_types_mutex);
  for (const auto& is_of_type : closure_types()) {
    if (is_of_type(optimizer)) return true;
  }
  return false;
}

namespace {

std::mutex capture_types_mutex;

/// What declare_capturable declared, by type test; a list whose elements never move.
std::list<std::pair<std::function<bool(const torch::optim::Optimizer&)>, StepCapture>>&
capture_types() {
  // Adam's and AdamW's from the start, as LBFGS's closure (an optimizer a
  // Trainer::configure_optimizer override built itself is captured too).
  static std::list<std::pair<std::function<bool(const torch::optim::Optimizer&)>, StepCapture>>
      types{{optimizer_is<torch::optim::Adam>(), adam_step_capture()},
            {optimizer_is<torch::optim::AdamW>(), adam_step_capture()}};
  return types;
}

}  // namespace

void declare_capturable(std::function<bool(const torch::optim::Optimizer&)> is_of_type,
                        StepCapture capture) {
  std::lock_guard<std::mutex> lock(capture_types_mutex);
  capture_types().emplace_back(std::move(is_of_type), std::move(capture));
}

const StepCapture* capture_of(const torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(capture_types_mutex);
  for (const auto& [is_of_type, capture] : capture_types()) {
    if (is_of_type(optimizer)) return &capture;
  }
  return nullptr;
}

std::string capture_refusal(const torch::optim::Optimizer& optimizer) {
  const StepCapture* capture = capture_of(optimizer);
  if (!capture) {
    return "its optimizer declares no captured step (optim/optimizer.h: declare_capturable; "
           "adam and adamw do)";
  }
  return capture->refusal(optimizer);
}

namespace {

using TypeTest = std::function<bool(const torch::optim::Optimizer&)>;
using Refusal = std::function<std::string(const torch::optim::Optimizer&)>;
std::mutex elementwise_types_mutex;

/// Why an Adam(W) with amsgrad in any group does not step elementwise alike ("" otherwise).
std::string amsgrad_refusal(const torch::optim::Optimizer& optimizer) {
  for (const auto& g : optimizer.param_groups()) {
    const auto* a = dynamic_cast<const torch::optim::AdamOptions*>(&g.options());
    const auto* w = dynamic_cast<const torch::optim::AdamWOptions*>(&g.options());
    if ((a && a->amsgrad()) || (w && w->amsgrad())) {
      return "its amsgrad step is LibTorch's, which rounds an element by where it falls";
    }
  }
  return "";
}

/// What declare_elementwise_step declared, by type test: the fused Adam(W) from the start.
std::list<std::pair<TypeTest, Refusal>>& elementwise_types() {
  static std::list<std::pair<TypeTest, Refusal>> types{
      {optimizer_is<FusedAdam>(), amsgrad_refusal}, {optimizer_is<FusedAdamW>(), amsgrad_refusal}};
  return types;
}

}  // namespace

void declare_elementwise_step(TypeTest is_of_type, Refusal refusal) {
  std::lock_guard<std::mutex> lock(elementwise_types_mutex);
  elementwise_types().emplace_back(std::move(is_of_type), std::move(refusal));
}

std::string elementwise_step_refusal(const torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(elementwise_types_mutex);
  for (const auto& [is_of_type, refusal] : elementwise_types()) {
    if (is_of_type(optimizer)) return refusal(optimizer);
  }
  return "its step is not declared to round each element alike wherever it falls "
         "(optim/optimizer.h: declare_elementwise_step; adam and adamw with args.fused: true "
         "are)";
}

double get_lr(const torch::optim::Optimizer& optimizer, size_t group) {
  return group_at(optimizer, group).options().get_lr();
}

void set_lr(torch::optim::Optimizer& optimizer, size_t group, double lr) {
  group_at(optimizer, group);  // bounds check
  optimizer.param_groups()[group].options().set_lr(lr);
}

std::shared_ptr<const Schema> optimizer_section_schema() {
  return options_of<OptimizerSection>().schema();
}

}  // namespace unitrain
