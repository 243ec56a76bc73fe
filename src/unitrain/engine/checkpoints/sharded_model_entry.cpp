// distributed.zero: 3's tensors in a checkpoint, by parts. The model: model-shards.json (the
// layout) and each rank's model-shard-rank-<R>.pt ("<i>": its part of flat i — bf16-true: of
// its float32 masters; "grad.<i>": that part's gradient when saved inside an accumulation
// window; rank 0's also "whole.<name>": the buffers and parameters outside the units). The ema
// callback's average: ema-shard-rank-<R>.pt in the same layout (rank 0's "whole.<name>": the
// average of the parameters outside the units). LoRA (TrainModule::checkpoints_trainable_only):
// neither holds the frozen flats' parts (nor the frozen parameters outside the units), and
// frozen_weights.json fingerprints them as a run without ZeRO 3 does; the resume keeps the base
// it built.
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
#include "unitrain/engine/checkpoints/rank_files.h"
#include "unitrain/engine/parameter_state.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/precision/master_weights.h"
#include "unitrain/precision/precision.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

constexpr const char* kGradPrefix = "grad.";

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

std::map<std::string, torch::Tensor> by_name(NamedTensors tensors) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, t] : tensors) out[name] = std::move(t);
  return out;
}

/// The module's parameters no unit holds (none of `params`' flats), by name, in module order:
/// rank 0 saves them whole, and the ema callback averages them after the shards.
Named parameters_outside_units(TrainModule& module, const ShardedParameters& params) {
  std::set<std::string> sharded;
  for (const auto& f : params.layout().flats) {
    for (const auto& m : f.members) sharded.insert(m.name);
  }
  Named out;
  for (const auto& p : module.weights().named_parameters()) {
    if (!sharded.count(p.key())) out.emplace_back(p.key(), p.value());
  }
  return out;
}

/// What both entries share: every rank's file of parts (`file_of`), rank 0's with the whole
/// tensors outside the units; restored from this rank's own file at the same world size and
/// layout, else cut from the merged parts, else from a whole dict (`whole_source`).
class ShardedPartsEntry : public CheckpointEntry {
 public:
  ShardedPartsEntry(ShardedParameters& params, ProcessGroup& group, std::string root,
                    ShardFileName file_of, std::string kind, std::string what)
      : params_(params),
        group_(group),
        root_(std::move(root)),
        file_of_(file_of),
        kind_(std::move(kind)),
        what_(std::move(what)) {}

  void save(CheckpointWrite& out) override {
    auto mine = std::make_shared<NamedTensors>();
    const std::vector<torch::Tensor> saved = parts();
    for (size_t i = 0; i < saved.size(); ++i) {
      if (!saves_part(i)) continue;
      mine->emplace_back(std::to_string(i), saved[i].detach().to(torch::kCPU).clone());
    }
    add_to_file(*mine);
    if (group_.rank() == 0) {
      for (auto& [name, t] : outside()) {
        mine->emplace_back(std::string(kWholeEntryPrefix) + name,
                           saved_form(t).to(torch::kCPU).clone());
      }
    }
    std::vector<CheckpointFile> others =
        write_rank_files(group_, root_, out.state.state.step, kind_, what_, file_of_,
                         [mine] { return save_tensor_dict(*mine); });
    if (!out.writes) return;
    add_layout(out);
    out.files.push_back({file_of_(0), {}, [mine] { return tensor_dict_image(*mine); }});
    for (CheckpointFile& f : others) out.files.push_back(std::move(f));
  }

  void restore(const CheckpointRead& in) override {
    const ShardLayout layout = params_.layout();
    const Named outside_now = outside();
    std::map<std::string, torch::Tensor> whole;  // the values of `outside_now`, by name
    const std::vector<torch::Tensor> into = parts();
    torch::NoGradGuard no_grad;
    if (in.has(files::kModelShards) && in.has(file_of_(0))) {
      const std::vector<char> text = in.read(files::kModelShards);
      const ShardLayout saved =
          ShardLayout::from_json({text.begin(), text.end()}, in.path(files::kModelShards));
      if (saved.world_size == layout.world_size && saved.same_flats(layout)) {
        const std::map<std::string, torch::Tensor> own = restore_own_parts(in, into);
        if (!outside_now.empty()) {  // rank 0's file holds them: mapped on the others
          const std::string first = file_of_(0);
          const auto from =
              in.rank == 0 ? own : by_name(map_tensor_dict(in.map(first), in.path(first)));
          for (const auto& [name, t] : from) {
            const std::string prefix = kWholeEntryPrefix;
            if (name.rfind(prefix, 0) == 0) whole[name.substr(prefix.size())] = t;
          }
        }
      } else if (saved.same_flats(layout)) {
        // Another world size: this rank's new parts from the elements of the saved parts that
        // fall in them, read from the mapped files (no rank holds the whole model).
        check_recut(in, saved);
        RecutParts recut = recut_model_shards(in.dir, file_of_, saved, layout, in.rank);
        for (size_t i = 0; i < into.size(); ++i) {
          if (!recut.parts[i].defined()) {
            UT_CHECK_TRAIN(!saves_part(i), in.dir, " holds no part of flat ", i, " (", what_,
                           "): its frozen weights were not saved");
            continue;
          }
          torch::Tensor part = into[i];
          part.copy_(recut.parts[i]);
        }
        whole = by_name(std::move(recut.whole));
      } else {
        check_recut(in, saved);
        whole = by_name(merge_model_shards(in.dir, file_of_));  // (with the whole.<name> ones)
        cut_into(into, whole, in.dir);
      }
    } else if (!restore_whole(in, into, whole)) {
      return;
    }
    for (auto& [name, t] : outside_now) {
      const auto it = whole.find(name);
      UT_CHECK_TRAIN(it != whole.end(), in.dir, " holds no ", name, " (", what_, ")");
      t.copy_(it->second);
    }
    restored();
  }

 protected:
  /// Per flat, the tensor saved as its part and restored in place.
  virtual std::vector<torch::Tensor> parts() = 0;
  /// The tensors outside the units, whole, by name (rank 0 saves them).
  virtual Named outside() = 0;
  /// A tensor of outside() as the file holds it.
  virtual torch::Tensor saved_form(const torch::Tensor& t) { return t.detach(); }
  /// More entries of this rank's file (the model's gradients inside a window).
  virtual void add_to_file(NamedTensors& mine) {}
  /// The model-shards.json layout, written once (the model's entry).
  virtual void add_layout(CheckpointWrite& out) {}
  /// From the checkpoint's own file of parts: its other entries.
  virtual void restore_more(const std::map<std::string, torch::Tensor>& own) {}
  /// Before re-cutting parts of another world size or layout.
  virtual void check_recut(const CheckpointRead& in, const ShardLayout& saved) {}
  /// A checkpoint without parts of this kind: `whole` (by name) from its whole dict (mapped:
  /// only this rank's elements are read), cut into `into`; false when there is nothing to
  /// restore from.
  virtual bool restore_whole(const CheckpointRead& in, const std::vector<torch::Tensor>& into,
                             std::map<std::string, torch::Tensor>& whole) = 0;
  /// After everything was restored.
  virtual void restored() {}
  /// Whether the checkpoint holds the frozen flats' parts (not LoRA's base: saves_part).
  virtual bool saves_frozen() const { return true; }

  /// Whether flat `i`'s parts are saved: all but the frozen ones (which train not and no
  /// optimizer group holds) when !saves_frozen(); those keep what the run built (the base).
  bool saves_part(size_t i) const {
    return saves_frozen() || params_.shards()[i].requires_grad() || params_.shard_keys()[i] >= 0;
  }

  void cut_into(const std::vector<torch::Tensor>& into,
                const std::map<std::string, torch::Tensor>& whole, const std::string& what) {
    const std::vector<torch::Tensor> cut =
        params_.cut(whole, what, torch::kFloat32, /*frozen_too=*/saves_frozen());
    for (size_t i = 0; i < into.size(); ++i) {
      if (cut[i].defined()) into[i].copy_(cut[i]);
    }
  }

  ShardedParameters& params_;
  ProcessGroup& group_;

 private:
  /// This rank's own file (the same layout and world size) into `into`; the file's entries.
  std::map<std::string, torch::Tensor> restore_own_parts(const CheckpointRead& in,
                                                         const std::vector<torch::Tensor>& into) {
    const std::string name = file_of_(in.rank);
    std::map<std::string, torch::Tensor> own =
        by_name(map_tensor_dict(in.map(name), in.path(name)));
    for (size_t i = 0; i < into.size(); ++i) {
      if (!saves_part(i)) continue;  // LoRA's base: as the run built it
      const auto it = own.find(std::to_string(i));
      UT_CHECK_TRAIN(it != own.end() && it->second.numel() == into[i].numel(), in.path(name),
                     " has no part of ", into[i].numel(), " elements for flat ", i);
      torch::Tensor part = into[i];
      part.copy_(it->second);
    }
    restore_more(own);
    return own;
  }

  std::string root_;
  ShardFileName file_of_;
  std::string kind_, what_;
};

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
        check_frozen_fingerprint({bytes.begin(), bytes.end()}, now,
                                 in.path(files::kFrozenWeights));
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

/// A callback's per-parameter state, by parts (ParameterState::keep_parts: the shards, then the
/// parameters outside the units).
class ShardedStateEntry : public ShardedPartsEntry {
 public:
  ShardedStateEntry(ParameterState& state, std::vector<std::string> outside_names,
                    std::vector<bool> outside_trains, bool frozen_saved,
                    ShardedParameters& params, ProcessGroup& group, std::string root)
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

CheckpointEntryPtr sharded_model_entry(TrainModule& module, ShardedParameters& params,
                                       ProcessGroup& group, const TrainState& counters,
                                       MasterWeights* masters, std::string root) {
  return std::make_unique<ShardedModelEntry>(module, params, group, counters, masters,
                                             std::move(root));
}

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
  return std::make_unique<ShardedStateEntry>(state, std::move(outside_names),
                                             std::move(outside_trains),
                                             !module.checkpoints_trainable_only(), params, group,
                                             std::move(root));
}

}  // namespace unitrain
