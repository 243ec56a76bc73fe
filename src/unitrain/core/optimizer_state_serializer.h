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

/// Where a serializer puts one parameter's state or one parameter group's options: named
/// entries, kept in the order written (PyTorch's state_dict layout: `step`, then tensors).
class StateWriter {
 public:
  virtual ~StateWriter() = default;
  /// An undefined tensor (a buffer the optimizer has not created) is left out.
  virtual void tensor(const std::string& name, const at::Tensor& value) = 0;
  virtual void integer(const std::string& name, int64_t value) = 0;
  virtual void real(const std::string& name, double value) = 0;
  virtual void flag(const std::string& name, bool value) = 0;
  virtual void pair(const std::string& name, std::tuple<double, double> value) = 0;
};

/// Reads back what a StateWriter wrote. Each getter throws TrainError naming the file and the
/// entry when it is missing or of another type; tensor() also checks the shape against the
/// parameter's and returns it on the parameter's device and dtype.
class StateReader {
 public:
  virtual ~StateReader() = default;
  /// Undefined when absent and not `required`.
  virtual at::Tensor tensor(const std::string& name, bool required) = 0;
  virtual int64_t integer(const std::string& name) = 0;
  virtual double real(const std::string& name) = 0;
  virtual bool flag(const std::string& name) = 0;
  virtual std::tuple<double, double> pair(const std::string& name) = 0;
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
/// per-parameter state is `State` and group options `GroupOptions`, from four functions on
/// those types:
///   save_state(const State&, StateWriter&),   load_state(StateReader&, State&),
///   save_options(const GroupOptions&, StateWriter&), load_options(StateReader&, GroupOptions&).
template <typename Optimizer, typename State, typename GroupOptions, typename SaveState,
          typename LoadState, typename SaveOptions, typename LoadOptions>
void register_optimizer_state(std::string type, SaveState save_state, LoadState load_state,
                              SaveOptions save_options, LoadOptions load_options) {
  using optimizer_state_detail::as;
  OptimizerStateSerializer s;
  s.type = type;
  s.handles = [](const torch::optim::Optimizer& o) {
    return dynamic_cast<const Optimizer*>(&o) != nullptr;
  };
  s.save_state = [type, save_state](const torch::optim::OptimizerParamState& st, StateWriter& w) {
    save_state(as<const State>(st, type, "parameter state"), w);
  };
  s.load_state = [load_state](StateReader& r) {
    auto st = std::make_unique<State>();
    load_state(r, *st);
    return std::unique_ptr<torch::optim::OptimizerParamState>(std::move(st));
  };
  s.save_options = [type, save_options](const torch::optim::OptimizerOptions& o, StateWriter& w) {
    save_options(as<const GroupOptions>(o, type, "parameter group's options"), w);
  };
  s.load_options = [type, load_options](StateReader& r, torch::optim::OptimizerOptions& o) {
    load_options(r, as<GroupOptions>(o, type, "parameter group's options"));
  };
  optimizer_state_serializers::add(std::move(s));
}

}  // namespace unitrain
