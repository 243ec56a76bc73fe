#include "unitrain/engine/checkpoints/checkpoint_entries.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/optimizer_state.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/checkpoint/state_json.h"
#include "unitrain/checkpoint/tensor_cut.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/train_module.h"
#include "unitrain/engine/callback_list.h"
#include "unitrain/engine/checkpoints/rank_files.h"
#include "unitrain/engine/step/lr_controller.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/optimizer_sharding.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace files = checkpoint_files;

bool CheckpointRead::has(const std::string& name) const { return CheckpointStore::has(dir, name); }

std::vector<char> CheckpointRead::read(const std::string& name) const {
  return CheckpointStore::read(dir, name);
}

MappedFile CheckpointRead::map(const std::string& name) const {
  return CheckpointStore::map(dir, name);
}

namespace {

/// Entry `name` of the checkpoint being read, a tensor dict in PyTorch's format; errors name its
/// file.
NamedTensors read_tensor_dict_entry(const CheckpointRead& in, const std::string& name) {
  return load_tensor_dict(in.read(name), in.path(name));
}

class ModelEntry : public CheckpointEntry {
 public:
  ModelEntry(TrainModule& module, Precision& precision, const TensorCut* cut)
      : module_(module), precision_(precision), cut_(cut) {}

  void save(CheckpointWrite& out) override {
    // distributed.tensor_parallel: the writer's tensor group joins the parts into the model's
    // whole tensors (every process of it takes part).
    const bool gathers = cut_ != nullptr && cut_->gathers;
    if (!out.writes && !gathers) return;
    // bf16-true: the float32 master weights (and buffers widened), not the bfloat16 copies.
    const MasterWeights* masters = precision_.masters();
    torch::nn::Module& weights = module_.weights();
    NamedTensors params, buffers;
    if (masters) {
      params = masters->parameters();
      buffers = masters->buffers();
    } else {
      for (const auto& p : weights.named_parameters()) params.emplace_back(p.key(), p.value());
      for (const auto& b : weights.named_buffers()) buffers.emplace_back(b.key(), b.value());
    }
    const bool adapters = module_.checkpoints_trainable_only();  // LoRA: not the base
    if (adapters && frozen_.empty()) frozen_ = fingerprint(masters ? &params : nullptr);
    if (adapters) params = trainable_state(weights, std::move(params));
    if (gathers) cut_->make_whole(params);
    if (!out.writes) return;
    if (adapters) out.add(files::kFrozenWeights, frozen_ + "\n");
    auto state =
        std::make_shared<NamedTensors>(named_state(params, buffers, out.async, out.buffers));
    out.files.push_back({files::kModel, {}, [state] { return tensor_dict_image(*state); }});
  }

  void restore(const CheckpointRead& in) override {
    const std::string file =
        has_model_shards(in.dir) ? in.dir + " (its parts merged)" : in.path(files::kModel);
    NamedTensors state = read_model_state(in.dir);  // whole, or distributed.zero: 3's parts
    if (cut_) cut_->cut(state);                     // this process's parts of the whole
    if (module_.checkpoints_trainable_only()) {
      check_frozen(in);
      state = with_frozen_parameters(module_.weights(), std::move(state));
    }
    MasterWeights* masters = precision_.masters();
    if (!masters) {
      load_module_state(module_.weights(), state, /*strict=*/true, file);
      return;
    }
    // bf16-true: the module takes the weights in bfloat16 (names and shapes checked there),
    // the masters the float32 values.
    NamedTensors low = state;
    for (auto& [name, t] : low) {
      if (t.is_floating_point()) t = t.to(torch::kBFloat16);
    }
    load_module_state(module_.weights(), low, /*strict=*/true, file);
    masters->load(state);
  }

 private:
  /// The frozen weights now must be those the checkpoint trained on (the base folder unchanged).
  void check_frozen(const CheckpointRead& in) {
    if (frozen_.empty()) {
      const MasterWeights* masters = precision_.masters();
      const NamedTensors values = masters ? masters->parameters() : NamedTensors();
      frozen_ = fingerprint(masters ? &values : nullptr);
    }
    if (!in.has(files::kFrozenWeights)) return;
    const std::vector<char> bytes = in.read(files::kFrozenWeights);
    check_frozen_fingerprint({bytes.begin(), bytes.end()}, frozen_, in.path(files::kFrozenWeights));
  }

  /// frozen_fingerprint of the module (of `values` for the ones it names): of the whole
  /// tensors under distributed.tensor_parallel, joined over the group for it (a collective of
  /// every process of it, once a run), so that it is the same whatever the plan.
  std::string fingerprint(const NamedTensors* values) {
    torch::nn::Module& weights = module_.weights();
    // A pipeline stage's: taken when the model was cut, before the others' memory went.
    if (cut_ != nullptr && cut_->stage) return cut_->stage->base_fingerprint;
    if (cut_ == nullptr || !cut_->group) return frozen_fingerprint(weights, values);
    std::map<std::string, torch::Tensor> given;  // bf16-true: the masters' values
    if (values != nullptr) given.insert(values->begin(), values->end());
    NamedTensors whole;
    for (const auto& p : weights.named_parameters()) {
      if (p.value().requires_grad()) continue;
      const auto it = given.find(p.key());
      whole.emplace_back(p.key(), it != given.end() ? it->second : p.value().detach());
    }
    cut_->make_whole(whole);
    return frozen_fingerprint(weights, &whole);
  }

  TrainModule& module_;
  Precision& precision_;
  const TensorCut* cut_;  ///< null unless distributed.tensor_parallel
  std::string frozen_;    ///< frozen_fingerprint, computed once (the frozen weights never change)
};

class RngEntry : public CheckpointEntry {
 public:
  explicit RngEntry(ProcessGroup* group) : group_(group) {}

  /// Every rank's generator state goes to rank 0, which writes the checkpoint.
  void save(CheckpointWrite& out) override {
    const std::vector<char> mine = save_tensor_dict(rng_state());
    std::vector<std::string> all{std::string(mine.begin(), mine.end())};
    if (group_) all = group_->all_gather(all[0]);
    if (!out.writes) return;
    for (size_t r = 0; r < all.size(); ++r) out.add(files::rng(static_cast<int>(r)), all[r]);
  }

  /// A rank the checkpoint had restores its generators; a rank it did not have (a resume on
  /// more processes) keeps the one seeded at the start, seed + rank, as a fresh run's would be.
  void restore(const CheckpointRead& in) override {
    const std::string name = files::rng(in.rank);
    if (in.rank < in.state.world_size) {
      load_rng_state(read_tensor_dict_entry(in, name), in.path(name));
      return;
    }
    log::info(
        fmt::format("{} has no generator state of rank {} (it was written by {} "
                    "process(es)): rank {} keeps its generator seeded with seed + rank",
                    in.dir, in.rank, in.state.world_size, in.rank));
  }

 private:
  ProcessGroup* group_;
};

class GradientsEntry : public CheckpointEntry {
 public:
  GradientsEntry(TrainModule& module, const TrainState& counters)
      : module_(module), counters_(counters) {}

  void save(CheckpointWrite& out) override {
    if (out.writes && counters_.micro_in_window != 0) {
      out.files.push_back({files::kGradients, tensor_dict_image(gradient_state(module_))});
    }
  }

  void restore(const CheckpointRead& in) override {
    if (!in.has(files::kGradients)) return;
    load_gradient_state(module_, read_tensor_dict_entry(in, files::kGradients),
                        in.path(files::kGradients));
  }

 private:
  TrainModule& module_;
  const TrainState& counters_;
};

class LossScalerEntry : public CheckpointEntry {
 public:
  explicit LossScalerEntry(Precision& precision) : precision_(precision) {}

  void save(CheckpointWrite& out) override {
    if (const LossScaler* scaler = precision_.scaler(); scaler && out.writes) {
      out.add(files::kLossScaler, scaler->state_json());
    }
  }

  void restore(const CheckpointRead& in) override {
    LossScaler* scaler = precision_.scaler();
    if (!scaler) return;
    if (in.has(files::kLossScaler)) {
      const std::vector<char> b = in.read(files::kLossScaler);
      scaler->load_state_json(std::string(b.begin(), b.end()), in.path(files::kLossScaler));
    } else {
      log::info(
          fmt::format("{} has no loss scaler state (saved with another train.precision): "
                      "the loss scale starts at {}",
                      in.dir, scaler->scale()));
    }
  }

 private:
  Precision& precision_;
};

class CallbacksEntry : public CheckpointEntry {
 public:
  explicit CallbacksEntry(CallbackList& callbacks) : callbacks_(callbacks) {}

  void save(CheckpointWrite& out) override {
    if (!out.writes) return;
    CheckpointEntries extra;
    callbacks_.call("on_save_checkpoint", &Callback::on_save_checkpoint, extra);
    for (const auto& [name, bytes] : extra) {
      UT_CHECK_TRAIN(!name.empty() && name.find('/') == std::string::npos,
                     "a callback's "
                     "checkpoint entry name must be a plain file name, got '",
                     name, "'");
      out.add(files::kCallbackPrefix + name, bytes);
    }
  }

  void restore(const CheckpointRead& in) override {
    const CheckpointEntries extra = read_callback_entries(in.dir);
    callbacks_.call("on_load_checkpoint", &Callback::on_load_checkpoint, extra);
  }

 private:
  CallbackList& callbacks_;
};

class ScheduleEntry : public CheckpointEntry {
 public:
  static constexpr const char* kSection = "schedule";
  ScheduleEntry(LrController& lr, const TrainState& counters) : lr_(lr), counters_(counters) {}

  /// trainer_state.json's section "schedule": the schedule's own numbers (Scheduler::state).
  void save(CheckpointWrite& out) override {
    Scheduler* s = lr_.scheduler();
    if (!s) return;
    StateJson j = StateJson::object();
    for (const auto& [k, v] : s->state()) j[k] = state_number(v);
    out.state.set_section(kSection, j.dump());
  }

  void restore(const CheckpointRead& in) override {
    const StateJson j = state_section(in.state.section(kSection));
    if (Scheduler* s = lr_.scheduler(); s && !j.empty()) {
      std::map<std::string, double> state;
      for (const auto& [k, v] : j.items()) state[k] = state_double(v);
      s->load_state(state);
    }
    lr_.follow(counters_);
  }

 private:
  LrController& lr_;
  const TrainState& counters_;
};

}  // namespace

std::map<std::string, std::string> read_callback_entries(const std::string& dir) {
  const std::string prefix = files::kCallbackPrefix;
  std::map<std::string, std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && CheckpointStore::has(dir, name)) {
      const std::vector<char> b = CheckpointStore::read(dir, name);
      out[name.substr(prefix.size())] = std::string(b.begin(), b.end());
    }
  }
  // distributed.zero: 3 saves a callback's per-parameter state (the ema callback's average) as
  // parts: merged, it is the callback's entry.
  for (const std::string& state : sharded_state_names(dir)) {
    if (out.count(files::state_entry(state))) continue;
    const std::vector<char> b = save_tensor_dict(
        merge_model_shards(dir, [&](int rank) { return files::state_shard(state, rank); }));
    out[files::state_entry(state)] = std::string(b.begin(), b.end());
  }
  return out;
}

CheckpointEntryPtr model_entry(TrainModule& module, Precision& precision, const TensorCut* cut) {
  return std::make_unique<ModelEntry>(module, precision, cut);
}

CheckpointEntryPtr rng_entry(ProcessGroup* group) { return std::make_unique<RngEntry>(group); }

CheckpointEntryPtr gradients_entry(TrainModule& module, const TrainState& counters) {
  return std::make_unique<GradientsEntry>(module, counters);
}

CheckpointEntryPtr loss_scaler_entry(Precision& precision) {
  return std::make_unique<LossScalerEntry>(precision);
}

CheckpointEntryPtr callbacks_entry(CallbackList& callbacks) {
  return std::make_unique<CallbacksEntry>(callbacks);
}

CheckpointEntryPtr schedule_entry(LrController& lr, const TrainState& counters) {
  return std::make_unique<ScheduleEntry>(lr, counters);
}

}  // namespace unitrain
