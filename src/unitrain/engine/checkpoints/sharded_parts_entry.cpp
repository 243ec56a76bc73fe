#include "unitrain/engine/checkpoints/sharded_parts_entry.h"

#include <torch/torch.h>

#include <set>

#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/engine/checkpoints/rank_files.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {
namespace files = checkpoint_files;

namespace sharded_parts {

std::map<std::string, torch::Tensor> by_name(NamedTensors tensors) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, t] : tensors) out[name] = std::move(t);
  return out;
}

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

}  // namespace sharded_parts

using sharded_parts::by_name;
using sharded_parts::Named;

bool ShardedPartsEntry::saves_part(size_t i) const {
  return saves_frozen() || params_.shards()[i].requires_grad() || params_.shard_keys()[i] >= 0;
}

void ShardedPartsEntry::cut_into(const std::vector<torch::Tensor>& into,
                                 const std::map<std::string, torch::Tensor>& whole,
                                 const std::string& what) {
  const std::vector<torch::Tensor> cut =
      params_.cut(whole, what, torch::kFloat32, /*frozen_too=*/saves_frozen());
  for (size_t i = 0; i < into.size(); ++i) {
    if (cut[i].defined()) into[i].copy_(cut[i]);
  }
}

void ShardedPartsEntry::save(CheckpointWrite& out) {
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

void ShardedPartsEntry::restore(const CheckpointRead& in) {
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

/// This rank's own file (the same layout and world size) into `into`; the file's entries.
std::map<std::string, torch::Tensor> ShardedPartsEntry::restore_own_parts(
    const CheckpointRead& in, const std::vector<torch::Tensor>& into) {
  const std::string name = file_of_(in.rank);
  std::map<std::string, torch::Tensor> own = by_name(map_tensor_dict(in.map(name), in.path(name)));
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

}  // namespace unitrain
