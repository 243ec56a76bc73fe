// distributed.zero: 3's model in a checkpoint, by parts: model-shards.json (the layout) and each
// rank's model-shard-rank-<R>.pt ("<i>": its part of flat i — bf16-true: of its float32
// masters; "grad.<i>": that part's gradient when saved inside an accumulation window; rank 0's
// also "whole.<name>": the buffers and parameters outside the units). (A callback's state by
// parts, the ema's average: sharded_state_entry.cpp; what both share: sharded_parts_entry.h.)
// LoRA (TrainModule::checkpoints_trainable_only): neither holds the frozen flats' parts (nor the
// frozen parameters outside the units), and frozen_weights.json fingerprints them as a run without
// ZeRO 3 does; the resume keeps the base it built.
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/file_image.h"
#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/train_state.h"
#include "unitrain/engine/checkpoints/checkpoint_entries.h"
#include "unitrain/engine/checkpoints/sharded_parts_entry.h"
#include "unitrain/engine/parameter_state.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/precision/master_weights.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

using sharded_parts::by_name;
using sharded_parts::Named;
using sharded_parts::parameters_outside_units;

constexpr const char* kGradPrefix = "grad.";

class ShardedModelEntry : public ShardedPartsEntry {
 public:
  ShardedModelEntry(TrainModule& module, ShardedParameters& params, ProcessGroup& group,
                    const TrainState& counters, MasterWeights* masters, std::string root)
      : ShardedPartsEntry(params, group, std::move(root), files::model_shard, "model",
                          "part of the model"),
        module_(module),
        counters_(counters),
        masters_(masters) {}

  void save(CheckpointWrite& out) override {
    if (module_.checkpoints_trainable_only()) {  // LoRA: the adapters' parts, not the base's
      const std::string& frozen = frozen_fingerprint();
      if (out.writes) out.add(files::kFrozenWeights, frozen + "\n");
    }
    ShardedPartsEntry::save(out);
  }

  void restore(const CheckpointRead& in) override {
    if (module_.checkpoints_trainable_only()) {
      const std::string& now = frozen_fingerprint();
      if (in.has(files::kFrozenWeights)) {
        const std::vector<char> bytes = in.read(files::kFrozenWeights);
        check_frozen_fingerprint({bytes.begin(), bytes.end()}, now, in.path(files::kFrozenWeights));
      }
    }
    ShardedPartsEntry::restore(in);
  }

 protected:
  bool saves_frozen() const override { return !module_.checkpoints_trainable_only(); }

  /// The shards, or bf16-true's float32 masters of them (model.pt merged is float32 then, as
  /// without distributed.zero: 3).
  std::vector<torch::Tensor> parts() override {
    std::vector<torch::Tensor> out = params_.shards();
    if (masters_) {
      const auto& m = masters_->shard_masters();
      for (size_t i = 0; i < out.size(); ++i) {
        if (m[i].defined()) out[i] = m[i];
      }
    }
    return out;
  }

  /// The module's buffers and the parameters no unit holds (LoRA: the trained ones).
  Named outside() override {
    Named out = parameters_outside_units(module_, params_);
    if (!saves_frozen()) {
      out.erase(std::remove_if(out.begin(), out.end(),
                               [](const auto& p) { return !p.second.requires_grad(); }),
                out.end());
    }
    for (const auto& b : module_.weights().named_buffers()) out.emplace_back(b.key(), b.value());
    return out;
  }

  torch::Tensor saved_form(const torch::Tensor& t) override {  // bf16-true: widened
    return masters_ && t.is_floating_point() ? t.detach().to(torch::kFloat32) : t.detach();
  }

  void add_to_file(NamedTensors& mine) override {
    if (counters_.micro_in_window == 0) return;
    const auto& shards = params_.shards();
    for (size_t i = 0; i < shards.size(); ++i) {
      if (shards[i].grad().defined()) {
        mine.emplace_back(kGradPrefix + std::to_string(i),
                          shards[i].grad().to(torch::kCPU).clone());
      }
    }
  }

  void add_layout(CheckpointWrite& out) override {
    out.add(files::kModelShards, params_.layout().to_json());
  }

  void restore_more(const std::map<std::string, torch::Tensor>& own) override {
    const auto& shards = params_.shards();
    for (size_t i = 0; i < shards.size(); ++i) {
      const auto grad = own.find(kGradPrefix + std::to_string(i));
      torch::Tensor shard = shards[i];
      if (grad != own.end()) shard.mutable_grad() = grad->second.to(shard.options()).clone();
    }
  }

  void check_recut(const CheckpointRead& in, const ShardLayout& saved) override {
    UT_CHECK_TRAIN(counters_.micro_in_window == 0, in.dir,
                   " was saved inside an accumulation window by ", saved.world_size,
                   " processes with other parts; resume it with ", saved.world_size,
                   " processes and the same distributed.zero and optimizer groups");
  }

  bool restore_whole(const CheckpointRead& in, const std::vector<torch::Tensor>& into,
                     std::map<std::string, torch::Tensor>& whole) override {
    // A checkpoint of a run without distributed.zero: 3.
    whole = by_name(map_tensor_dict(in.map(files::kModel), in.path(files::kModel)));
    cut_into(into, whole, in.path(files::kModel));
    return true;
  }

  void restored() override {  // bf16-true: the shards are their masters rounded
    if (!masters_) return;
    const auto& shards = params_.shards();
    const auto& m = masters_->shard_masters();
    for (size_t i = 0; i < shards.size(); ++i) {
      torch::Tensor shard = shards[i];
      if (m[i].defined()) shard.copy_(m[i]);
    }
  }

 private:
  /// LoRA's frozen_weights.json of the frozen parameters as the parts hold them (bf16-true: their
  /// float32 masters): each rank's CRC of its slice of each, joined in rank order, so that it
  /// equals frozen_fingerprint of the whole module (any ZeRO stage, any world size). A
  /// collective, computed once (the frozen weights never change).
  const std::string& frozen_fingerprint() {
    if (!frozen_.empty()) return frozen_;
    const ShardLayout layout = params_.layout();
    std::map<std::string, std::pair<size_t, int64_t>> place;  // name: flat, offset
    for (size_t i = 0; i < layout.flats.size(); ++i) {
      for (const auto& m : layout.flats[i].members) place[m.name] = {i, m.offset};
    }
    const std::vector<torch::Tensor> values = parts();
    const int rank = group_.rank();
    std::vector<std::pair<std::string, std::vector<int64_t>>> frozen;
    std::vector<uint64_t> mine;  // per frozen parameter: this rank's CRC, bytes
    for (const auto& p : module_.weights().named_parameters()) {
      if (p.value().requires_grad()) continue;
      frozen.emplace_back(p.key(), p.value().sizes().vec());
      torch::Tensor slice;
      const auto at = place.find(p.key());
      if (at != place.end()) {
        const ShardLayout::Flat& flat = layout.flats[at->second.first];
        const int64_t first = rank * flat.part, offset = at->second.second;
        const int64_t lo = std::max(first, offset);
        const int64_t hi = std::min(first + flat.part, offset + p.value().numel());
        if (lo < hi) slice = values[at->second.first].narrow(0, lo - first, hi - lo);
      } else if (rank == 0) {  // outside the units: whole on every rank
        slice = p.value();
      }
      uint32_t crc = 0;
      uint64_t bytes = 0;
      if (slice.defined()) {
        const torch::Tensor v = FrozenFingerprint::values_form(slice);
        bytes = v.nbytes();
        crc = crc32_of(static_cast<const char*>(v.data_ptr()), bytes);
      }
      mine.push_back(crc);
      mine.push_back(bytes);
    }
    const std::vector<std::string> all = group_.all_gather(
        std::string(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(uint64_t)));
    FrozenFingerprint out;
    for (size_t j = 0; j < frozen.size(); ++j) {
      uint32_t crc = 0;
      uint64_t bytes = 0;
      for (const std::string& theirs : all) {
        uint64_t slice[2];
        std::memcpy(slice, theirs.data() + 2 * j * sizeof(uint64_t), sizeof(slice));
        crc = crc32_combine_of(crc, static_cast<uint32_t>(slice[0]), slice[1]);
        bytes += slice[1];
      }
      out.add(frozen[j].first, frozen[j].second, crc, bytes);
    }
    frozen_ = out.json();
    return frozen_;
  }

  TrainModule& module_;
  const TrainState& counters_;
  MasterWeights* masters_;
  std::string frozen_;
};

}  // namespace

CheckpointEntryPtr sharded_model_entry(TrainModule& module, ShardedParameters& params,
                                       ProcessGroup& group, const TrainState& counters,
                                       MasterWeights* masters, std::string root) {
  return std::make_unique<ShardedModelEntry>(module, params, group, counters, masters,
                                             std::move(root));
}

}  // namespace unitrain
