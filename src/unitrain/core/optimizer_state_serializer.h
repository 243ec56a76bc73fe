#pragma once
// OptimizerStateSerializer: how one optimizer type's state goes into a checkpoint and back.
// An optimizer registers it next to its factory (optim/); checkpoint/ writes and reads the
// file through it, so a new optimizer needs no edit in checkpoint/.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "unitrain/core/error.h"

namespace at {
class Tensor;
}
namespace torch::optim {
class Optimizer;
class OptimizerOptions;
class OptimizerParamState;
}  // namespace torch::optim

namespace unitrain {

/// What a serializer's field function is given when a checkpoint is written: each call adds
/// one named entry, kept in call order (PyTorch's state_dict layout: `step`, then tensors).
class StateWriter {
 public:
  virtual ~StateWriter() = default;
  virtual void tensor(const std::string& name, const at::Tensor& value) = 0;
  /// Left out when undefined (a buffer the optimizer has not created).
  virtual void optional_tensor(const std::string& name, const at::Tensor& value) = 0;
  virtual void integer(const std::string& name, int64_t value) = 0;
  virtual void real(const std::string& name, double value) = 0;
  virtual void flag(const std::string& name, bool value) = 0;
  virtual void pair(const std::string& name, const std::tuple<double, double>& value) = 0;
};

/// What the same field function is given when a checkpoint is read: each call sets `value`
/// from the entry `name`. TrainError naming the file and the entry when it is missing or of
/// another type; a state tensor must have its parameter's shape and comes on its device and
/// dtype; an absent optional tensor is set undefined.
class StateReader {
 public:
  virtual ~StateReader() = default;
  virtual void tensor(const std::string& name, at::Tensor& value) = 0;
  virtual void optional_tensor(const std::string& name, at::Tensor& value) = 0;
  virtual void integer(const std::string& name, int64_t& value) = 0;
  virtual void real(const std::string& name, double& value) = 0;
  virtual void flag(const std::string& name, bool& value) = 0;
  virtual void pair(const std::string& name, std::tuple<double, double>& value) = 0;
};

/// One optimizer type's state in a checkpoint. `type` is written into the file and must match
/// on load; `handles` says whether an optimizer is of this type.
struct OptimizerStateSerializer {
  std::string type;  ///< e.g. "adam"
  std::function<bool(const torch::optim::Optimizer&)> handles;
  std::function<void(const torch::optim::OptimizerParamState&, StateWriter&)> save_state;
  std::function<std::unique_ptr<torch::optim::OptimizerParamState>(StateReader&)> load_state;
  std::function<void(const torch::optim::OptimizerOptions&, StateWriter&)> save_options;
  std::function<void(StateReader&, torch::optim::OptimizerOptions&)> load_options;
  /// Set for an optimizer that makes its state when it is built (Adagrad's sums), not at its
  /// first step: the state of a parameter given to it later (distributed.zero: 3's parts), in
  /// a group with these options. Empty for the others.
  std::function<std::unique_ptr<torch::optim::OptimizerParamState>(
      const at::Tensor& param, const torch::optim::OptimizerOptions& options)>
      initial_state{};
};

/// The registered serializers (an optimizer without one is saved as LibTorch's own archive).
namespace optimizer_state_serializers {
/// TrainError when `s.type` is registered already.
void add(OptimizerStateSerializer s);
/// The first registered serializer that handles `optimizer`, or nullptr.
const OptimizerStateSerializer* find(const torch::optim::Optimizer& optimizer);
/// The serializer of `type`, or nullptr.
const OptimizerStateSerializer* find(const std::string& type);
}  // namespace optimizer_state_serializers

namespace optimizer_state_detail {
/// `from` as a Derived; TrainError naming `type` and `what` when it is not one.
template <typename Derived, typename Base>
Derived& as(Base& from, const std::string& type, const char* what) {
  auto* derived = dynamic_cast<Derived*>(&from);
  UT_CHECK_TRAIN(derived != nullptr, "optimizer '", type, "': a ", what, " of another type");
  return *derived;
}
}  // namespace optimizer_state_detail

/// Registers the serializer of optimizer class `Optimizer` (and its subclasses) whose
/// per-parameter state is `State` and group options `GroupOptions`. `state_fields` and
/// `option_fields` name each field once for both directions: generic lambdas called with
/// (const State&, StateWriter&) to save and (State&, StateReader&) to load (LibTorch's
/// TORCH_ARG accessors return a reference the reader sets), e.g.
///   [](auto& s, auto& io) { io.integer("step", s.step()); io.tensor("sum", s.sum()); }
/// `initial_state` (optional): for an optimizer that makes its state when built, the state of a
/// parameter (OptimizerStateSerializer::initial_state), given (const at::Tensor& param, const
/// GroupOptions&).
template <typename Optimizer, typename State, typename GroupOptions, typename StateFields,
          typename OptionFields>
void register_optimizer_state(
    const std::string& type, StateFields state_fields, OptionFields option_fields,
    std::function<std::unique_ptr<State>(const at::Tensor&, const GroupOptions&)> initial_state =
        {}) {
  using optimizer_state_detail::as;
  OptimizerStateSerializer s;
  s.type = type;
  s.handles = [](const torch::optim::Optimizer& o) {
    return dynamic_cast<const Optimizer*>(&o) != nullptr;
  };
  s.save_state = [type, state_fields](const torch::optim::OptimizerParamState& st, StateWriter& w) {
    state_fields(as<const State>(st, type, "parameter state"), w);
  };
  s.load_state = [state_fields](StateReader& r) {
    auto st = std::make_unique<State>();
    state_fields(*st, r);
    return std::unique_ptr<torch::optim::OptimizerParamState>(std::move(st));
  };
  s.save_options = [type, option_fields](const torch::optim::OptimizerOptions& o, StateWriter& w) {
    option_fields(as<const GroupOptions>(o, type, "parameter group's options"), w);
  };
  s.load_options = [type, option_fields](StateReader& r, torch::optim::OptimizerOptions& o) {
    option_fields(as<GroupOptions>(o, type, "parameter group's options"), r);
  };
  if (initial_state) {
    s.initial_state = [type, initial_state](const at::Tensor& p,
                                            const torch::optim::OptimizerOptions& o) {
      return std::unique_ptr<torch::optim::OptimizerParamState>(
          initial_state(p, as<const GroupOptions>(o, type, "parameter group's options")));
    };
  }
  optimizer_state_serializers::add(std::move(s));
}

}  // namespace unitrain
