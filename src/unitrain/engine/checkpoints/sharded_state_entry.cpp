// A callback's per-parameter state under distributed.zero: 3 (the ema callback's average):
// <name>-shard-rank-<R>.pt in the model's layout, restored as the model's parts are.
#include <torch/torch.h>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/train_module.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/checkpoints/sharded_parts_entry.h"
#include "unitrain/engine/parameter_state.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

using sharded_parts::by_name;
using sharded_parts::Named;
using sharded_parts::parameters_outside_units;

/// A callback's per-parameter state, by parts (ParameterState::keep_parts: the shards, then the
/// parameters outside the units).
class ShardedStateEntry : public ShardedPartsEntry {
 public:
  ShardedStateEntry(ParameterState& state, std::vector<std::string> outside_names,
                    std::vector<bool> outside_trains, bool frozen_saved, ShardedParameters& params,
                    ProcessGroup& group, std::string root)
      : ShardedPartsEntry(
            params, group, std::move(root),
            [name = state.state_name()](int rank) { return files::state_shard(name, rank); },
            state.state_name(), "part of the " + state.state_name() + " callback's state"),
        state_(state),
        outside_names_(std::move(outside_names)),
        outside_trains_(std::move(outside_trains)),
        frozen_saved_(frozen_saved) {}

 protected:
  bool saves_frozen() const override { return frozen_saved_; }

  std::vector<torch::Tensor> parts() override {
    const auto& a = state_.values();
    return {a.begin(), a.begin() + static_cast<std::ptrdiff_t>(params_.shards().size())};
  }

  Named outside() override {
    const auto& a = state_.values();
    Named out;
    for (size_t j = 0; j < outside_names_.size(); ++j) {
      if (!frozen_saved_ && !outside_trains_[j]) continue;  // LoRA's base: its own average
      out.emplace_back(outside_names_[j], a[params_.shards().size() + j]);
    }
    return out;
  }

  bool restore_whole(const CheckpointRead& in, const std::vector<torch::Tensor>& into,
                     std::map<std::string, torch::Tensor>& whole) override {
    const std::string file =
        std::string(files::kCallbackPrefix) + files::state_entry(state_.state_name());
    if (!in.has(file)) {  // as a callback's on_load_checkpoint: from the resumed weights
      log::info(state_.state_name() +
                ": the checkpoint holds none of its state; it starts from the resumed weights");
      state_.restart_from_parts();
      return false;
    }
    whole = by_name(map_tensor_dict(in.map(file), in.path(file)));
    cut_into(into, whole, in.path(file));
    return true;
  }

 private:
  ParameterState& state_;
  std::vector<std::string> outside_names_;
  std::vector<bool> outside_trains_;
  bool frozen_saved_;
};

}  // namespace

void make_state_whole(ParameterState& state, TrainModule& module, const ShardedParameters& params) {
  const std::vector<torch::Tensor>& values = state.values();
  const size_t shards = params.shards().size();
  std::map<std::string, torch::Tensor> whole =
      params.gather_whole({values.begin(), values.begin() + static_cast<std::ptrdiff_t>(shards)});
  size_t next = shards;  // then the parameters outside the units, as sharded_state_entry laid
                         // them out
  for (const auto& [name, t] : parameters_outside_units(module, params)) {
    whole[name] = values.at(next++);
  }
  state.make_whole(module.weights(), whole);
}

CheckpointEntryPtr sharded_state_entry(ParameterState& state, TrainModule& module,
                                       ShardedParameters& params, ProcessGroup& group,
                                       std::string root) {
  std::vector<torch::Tensor> parts = params.shards();
  std::vector<std::string> outside_names;
  std::vector<bool> outside_trains;
  for (const auto& [name, t] : parameters_outside_units(module, params)) {
    outside_names.push_back(name);
    outside_trains.push_back(t.requires_grad());
    parts.push_back(t);
  }
  state.keep_parts(std::move(parts));
  return std::make_unique<ShardedStateEntry>(
      state, std::move(outside_names), std::move(outside_trains),
      !module.checkpoints_trainable_only(), params, group, std::move(root));
}

}  // namespace unitrain
