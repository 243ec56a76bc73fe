#include "unitrain/checkpoint/tensor_cut.h"

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <tuple>

#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"
#include "unitrain/core/optimizer_state_serializer.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

void TensorCut::make_whole(NamedTensors& named) const {
  for (auto& [name, t] : named) {
    if (elsewhere.count(name)) continue;
    const auto it = splits.find(name);
    if (it != splits.end()) t = tp::whole_of(t, it->second, *group);
  }
  if (!pipe_gathers) return;
  // Stage by stage, each sends the writer its tensors in the model's order.
  const int writer = stage->stages() - 1;
  for (int s = 0; s < writer; ++s) {
    for (auto& [name, t] : named) {
      const auto owner = stage_of.find(name);
      if (owner == stage_of.end() || owner->second != s) continue;
      if (stage->stage() == s) {
        stage->group().send(t.detach(), stage->rank_of(writer));
      } else if (stage->stage() == writer) {
        std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
        const auto split = splits.find(name);
        // (A tensor held here too, a tied head's, was made whole above.)
        if (split != splits.end() && group && elsewhere.count(name)) {
          const int64_t d = split->second.dim < 0 ? split->second.dim + t.dim() : split->second.dim;
          shape[static_cast<size_t>(d)] =
              tp::whole_size(split->second, t.size(d), group->world_size());
        }
        torch::Tensor whole = torch::empty(shape, t.options());
        stage->group().recv(whole, stage->rank_of(s));
        t = whole;
      }
    }
  }
}

void TensorCut::cut(NamedTensors& named) const {
  for (auto& [name, t] : named) {
    const auto here = elsewhere.find(name);
    if (here != elsewhere.end()) {
      t = here->second;  // loaded as itself: nothing copied
      continue;
    }
    const auto it = splits.find(name);
    if (it == splits.end()) continue;
    t = tp::part_of(t, it->second.dim, group->rank(), group->world_size(), it->second.blocks);
  }
}

void TensorCut::drop_elsewhere_state(torch::optim::Optimizer& optimizer) const {
  auto& state = optimizer.state();
  for (const auto& [name, t] : elsewhere) state.erase(optimizer_state_key(t));
}

namespace {

/// One field of a parameter's optimizer state, as its serializer names it.
struct StateField {
  enum class Kind { Tensor, OptionalTensor, Integer, Real, Flag, Pair } kind;
  std::string name;
  torch::Tensor tensor;
  int64_t integer = 0;
  double real = 0;
  bool flag = false;
  std::tuple<double, double> pair{};
};

class Collect : public StateWriter {
 public:
  void tensor(const std::string& n, const at::Tensor& v) override {
    add(StateField::Kind::Tensor, n).tensor = v;
  }
  void optional_tensor(const std::string& n, const at::Tensor& v) override {
    add(StateField::Kind::OptionalTensor, n).tensor = v;
  }
  void integer(const std::string& n, int64_t v) override {
    add(StateField::Kind::Integer, n).integer = v;
  }
  void real(const std::string& n, double v) override { add(StateField::Kind::Real, n).real = v; }
  void flag(const std::string& n, bool v) override { add(StateField::Kind::Flag, n).flag = v; }
  void pair(const std::string& n, const std::tuple<double, double>& v) override {
    add(StateField::Kind::Pair, n).pair = v;
  }
  std::vector<StateField> fields;

 private:
  StateField& add(StateField::Kind kind, const std::string& name) {
    fields.push_back(StateField{kind, name});
    return fields.back();
  }
};

class Replay : public StateReader {
 public:
  explicit Replay(const std::vector<StateField>& fields) : fields_(fields) {}
  void tensor(const std::string& n, at::Tensor& v) override { v = find(n).tensor; }
  void optional_tensor(const std::string& n, at::Tensor& v) override { v = find(n).tensor; }
  void integer(const std::string& n, int64_t& v) override { v = find(n).integer; }
  void real(const std::string& n, double& v) override { v = find(n).real; }
  void flag(const std::string& n, bool& v) override { v = find(n).flag; }
  void pair(const std::string& n, std::tuple<double, double>& v) override { v = find(n).pair; }

 private:
  const StateField& find(const std::string& name) const {
    for (const StateField& f : fields_) {
      if (f.name == name) return f;
    }
    throw TrainError("optimizer state: no field '" + name + "' to cut");
  }
  const std::vector<StateField>& fields_;
};

const OptimizerStateSerializer& serializer_of(const torch::optim::Optimizer& optimizer) {
  const OptimizerStateSerializer* s = optimizer_state_serializers::find(optimizer);
  UT_CHECK_TRAIN(s != nullptr,
                 "distributed.tensor_parallel: the optimizer has no registered state serializer, "
                 "so its state cannot be saved whole (the built-in sgd, adam, adamw, adagrad and "
                 "rmsprop have one; register_optimizer_state in C++)");
  return *s;
}

/// `state` with each tensor of `shape` put through `f` (the parameter's moments; a step count
/// or a scalar tensor as it is).
std::unique_ptr<torch::optim::OptimizerParamState> transformed(
    const OptimizerStateSerializer& s, const torch::optim::OptimizerParamState& state,
    at::IntArrayRef shape, const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  Collect fields;
  s.save_state(state, fields);
  for (StateField& field : fields.fields) {
    const bool tensor =
        field.kind == StateField::Kind::Tensor || field.kind == StateField::Kind::OptionalTensor;
    if (tensor && field.tensor.defined() && field.tensor.sizes().equals(shape)) {
      field.tensor = f(field.tensor);
    }
  }
  Replay replay(fields.fields);
  return s.load_state(replay);
}

/// Each parameter of `optimizer`'s groups that `cut` cuts, with its name and split.
struct CutParameter {
  torch::Tensor* param;  ///< in the optimizer's group
  tp::Split split;
};
std::vector<CutParameter> cut_parameters(torch::optim::Optimizer& optimizer,
                                         const NamedTensors& params, const TensorCut& cut) {
  std::unordered_map<const void*, tp::Split> by_impl;
  for (const auto& [name, t] : params) {
    const auto it = cut.splits.find(name);
    if (it != cut.splits.end()) by_impl.emplace(t.unsafeGetTensorImpl(), it->second);
  }
  std::vector<CutParameter> out;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      const auto it = by_impl.find(p.unsafeGetTensorImpl());
      if (it != by_impl.end()) out.push_back({&p, it->second});
    }
  }
  return out;
}

}  // namespace

struct WholeOptimizerState::Swap {
  OptimizerStateMap::key_type key;
  std::unique_ptr<torch::optim::OptimizerParamState> part;
};

WholeOptimizerState::WholeOptimizerState(torch::optim::Optimizer& optimizer,
                                         const NamedTensors& params, const TensorCut& cut,
                                         bool every_replica)
    : optimizer_(optimizer) {
  if (!cut.gathers && !every_replica) return;
  const OptimizerStateSerializer& s = serializer_of(optimizer);
  auto& state = optimizer.state();
  for (const CutParameter& c : cut_parameters(optimizer, params, cut)) {
    const auto it = state.find(optimizer_state_key(*c.param));
    // No step yet, or (ZeRO) another replica's: alike on every process of the group.
    if (it == state.end()) continue;
    auto whole = transformed(s, *it->second, c.param->sizes(), [&](const torch::Tensor& t) {
      return tp::whole_of(t, c.split, *cut.group);
    });
    swaps_.push_back({it->first, std::move(it->second)});
    it->second = std::move(whole);
  }
}

WholeOptimizerState::~WholeOptimizerState() {
  auto& state = optimizer_.state();
  for (Swap& swap : swaps_) state[swap.key] = std::move(swap.part);
}

struct BorrowedStateAside::Swap {
  OptimizerStateMap::key_type key;
  std::unique_ptr<torch::optim::OptimizerParamState> state;
};

BorrowedStateAside::BorrowedStateAside(torch::optim::Optimizer& optimizer, const TensorCut& cut)
    : optimizer_(optimizer) {
  if (!cut.stage) return;
  auto& state = optimizer.state();
  for (const SharedParameter& s : cut.stage->shared()) {
    if (s.owner == cut.stage->stage()) continue;
    const auto it = state.find(optimizer_state_key(s.param));
    if (it == state.end()) continue;
    aside_.push_back({it->first, std::move(it->second)});
    state.erase(it);
  }
}

BorrowedStateAside::~BorrowedStateAside() {
  auto& state = optimizer_.state();
  for (Swap& s : aside_) state[s.key] = std::move(s.state);
}

void load_cut_optimizer_state(torch::optim::Optimizer& optimizer, const NamedTensors& params,
                              const TensorCut& cut, std::vector<OptimizerFile> files) {
  const std::vector<CutParameter> cuts = cut_parameters(optimizer, params, cut);
  // The file's whole tensors are read against whole-shaped stand-ins of the cut parameters,
  // then each one's state is cut and kept under the parameter itself.
  std::vector<torch::Tensor> parts;
  for (const CutParameter& c : cuts) {
    parts.push_back(*c.param);
    std::vector<int64_t> shape(c.param->sizes().begin(), c.param->sizes().end());
    const int64_t d = c.split.dim < 0 ? c.split.dim + c.param->dim() : c.split.dim;
    shape[size_t(d)] = tp::whole_size(c.split, c.param->size(d), cut.group->world_size());
    *c.param = torch::empty(shape, c.param->options());
  }
  auto put_back = [&] {
    for (size_t i = 0; i < cuts.size(); ++i) *cuts[i].param = parts[i];
  };
  try {
    load_optimizer_state(optimizer, std::move(files));
  } catch (...) {
    put_back();
    throw;
  }
  auto& state = optimizer.state();
  const OptimizerStateSerializer* s = optimizer_state_serializers::find(optimizer);
  for (size_t i = 0; i < cuts.size(); ++i) {
    const auto it = state.find(optimizer_state_key(*cuts[i].param));
    if (it == state.end() || s == nullptr) continue;
    const tp::Split split = cuts[i].split;
    auto part = transformed(*s, *it->second, cuts[i].param->sizes(), [&](const torch::Tensor& t) {
      return tp::part_of(t, split.dim, cut.group->rank(), cut.group->world_size(), split.blocks);
    });
    state.erase(it);
    state[optimizer_state_key(parts[i])] = std::move(part);
  }
  put_back();
}

}  // namespace unitrain
