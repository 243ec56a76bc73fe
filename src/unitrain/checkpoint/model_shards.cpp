#include "unitrain/checkpoint/model_shards.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/shard_layout.h"

namespace unitrain {
namespace files = checkpoint_files;

bool has_model_shards(const std::string& dir) {
  return CheckpointStore::has(dir, files::kModelShards);
}

namespace {

/// Every rank's file of parts (`file_of`) of checkpoint `dir`, mapped and verified: each flat's
/// parts by rank, views of the mappings (read where touched), and rank 0's whole.<name>
/// entries, by name without the prefix. A flat that does not train (key -1) whose parts no
/// rank saved (LoRA's base: frozen_weights.json fingerprints it) has no parts.
struct SavedParts {
  std::vector<std::vector<torch::Tensor>> parts;
  NamedTensors whole;
};

SavedParts map_saved_parts(const std::string& dir, ShardFileName file_of,
                           const ShardLayout& layout) {
  SavedParts out;
  out.parts.resize(layout.flats.size());
  for (int r = 0; r < layout.world_size; ++r) {
    const std::string name = file_of(r);
    const std::string what = dir + "/" + name;
    UT_CHECK_TRAIN(CheckpointStore::has(dir, name), dir, " has no ", name, " (", dir, "/",
                   files::kModelShards, " says ", layout.world_size, " ranks wrote parts)");
    std::map<std::string, torch::Tensor> mine;
    for (auto& [key, t] : map_tensor_dict(CheckpointStore::map(dir, name), what)) {
      const std::string prefix = kWholeEntryPrefix;
      if (r == 0 && key.rfind(prefix, 0) == 0) {  // buffers, parameters outside the units
        out.whole.emplace_back(key.substr(prefix.size()), t);
      } else {
        mine[key] = t;
      }
    }
    for (size_t i = 0; i < layout.flats.size(); ++i) {
      const auto it = mine.find(std::to_string(i));
      if (it == mine.end() && r == 0 && layout.flats[i].key < 0) continue;  // not saved
      if (r > 0 && out.parts[i].empty()) {
        UT_CHECK_TRAIN(it == mine.end(), what, ": a part of flat ", i,
                       ", which rank 0 saved none of");
        continue;
      }
      UT_CHECK_TRAIN(
          it != mine.end() && it->second.dim() == 1 && it->second.numel() == layout.flats[i].part,
          what, ": no part of ", layout.flats[i].part, " elements for flat ", i);
      out.parts[i].push_back(it->second);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> sharded_state_names(const std::string& dir) {
  const std::string first = std::string(checkpoint_files::kStateShardSuffix) + "0.pt";
  std::vector<std::string> out;
  for (const auto& [name, size] : CheckpointStore::files_of(dir)) {
    if (name.size() > first.size() &&
        name.compare(name.size() - first.size(), first.size(), first) == 0 &&
        name != checkpoint_files::model_shard(0)) {
      out.push_back(name.substr(0, name.size() - first.size()));
    }
  }
  return out;
}

NamedTensors merge_model_shards(const std::string& dir, ShardFileName file_of) {
  const std::vector<char> text = CheckpointStore::read(dir, files::kModelShards);
  const std::string layout_file = dir + "/" + files::kModelShards;
  const ShardLayout layout = ShardLayout::from_json({text.begin(), text.end()}, layout_file);
  SavedParts saved = map_saved_parts(dir, file_of, layout);
  NamedTensors out;
  for (size_t i = 0; i < layout.flats.size(); ++i) {
    const ShardLayout::Flat& flat = layout.flats[i];
    if (saved.parts[i].empty()) continue;  // a frozen flat not saved
    const torch::Tensor whole = torch::cat(saved.parts[i]);
    for (const ShardLayout::Member& m : flat.members) {
      int64_t numel = 1;
      for (int64_t d : m.shape) numel *= d;
      UT_CHECK_TRAIN(m.offset >= 0 && m.offset + numel <= flat.length, layout_file, ": ", m.name,
                     " lies outside its flat");
      out.emplace_back(m.name, whole.narrow(0, m.offset, numel).view(m.shape).clone());
    }
  }
  for (auto& [name, t] : saved.whole) out.emplace_back(name, t.clone());
  return out;
}

void copy_flat_range(const std::vector<torch::Tensor>& parts, int64_t part, int64_t start,
                     torch::Tensor out) {
  const int64_t end = start + out.numel();
  for (int64_t q = start / std::max<int64_t>(part, 1);
       q < static_cast<int64_t>(parts.size()) && q * part < end; ++q) {
    const int64_t from = std::max(start, q * part), to = std::min(end, (q + 1) * part);
    if (from >= to) continue;
    out.narrow(0, from - start, to - from)
        .copy_(parts[size_t(q)].narrow(0, from - q * part, to - from));
  }
}

RecutParts recut_model_shards(const std::string& dir, ShardFileName file_of,
                              const ShardLayout& saved, const ShardLayout& layout, int rank) {
  UT_CHECK_TRAIN(saved.same_flats(layout), dir,
                 "'s parts are of other flats: they cannot be "
                 "re-cut part by part");
  SavedParts from = map_saved_parts(dir, file_of, saved);
  RecutParts out;
  out.whole = std::move(from.whole);
  for (size_t i = 0; i < layout.flats.size(); ++i) {
    const ShardLayout::Flat& flat = layout.flats[i];
    if (from.parts[i].empty()) {  // a frozen flat not saved
      out.parts.emplace_back();
      continue;
    }
    torch::Tensor mine = torch::zeros({flat.part}, from.parts[i][0].options());
    const int64_t start = rank * flat.part;
    const int64_t n = std::max<int64_t>(0, std::min(flat.part, flat.length - start));
    if (n > 0) copy_flat_range(from.parts[i], saved.flats[i].part, start, mine.narrow(0, 0, n));
    out.parts.push_back(mine);
  }
  return out;
}

NamedTensors read_model_state(const std::string& dir) {
  if (!CheckpointStore::has(dir, files::kModel) && has_model_shards(dir)) {
    return merge_model_shards(dir);
  }
  return load_tensor_dict(CheckpointStore::read(dir, files::kModel), dir + "/" + files::kModel);
}

}  // namespace unitrain
