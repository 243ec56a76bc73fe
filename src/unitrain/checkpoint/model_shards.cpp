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

NamedTensors merge_model_shards(const std::string& dir, ShardFileName file_of) {
  const std::vector<char> text = CheckpointStore::read(dir, files::kModelShards);
  const std::string layout_file = dir + "/" + files::kModelShards;
  const ShardLayout layout = ShardLayout::from_json({text.begin(), text.end()}, layout_file);
  // Each flat's parts, by rank.
  std::vector<std::vector<torch::Tensor>> parts(layout.flats.size());
  NamedTensors whole;
  for (int r = 0; r < layout.world_size; ++r) {
    const std::string name = file_of(r);
    const std::string what = dir + "/" + name;
    UT_CHECK_TRAIN(CheckpointStore::has(dir, name), dir, " has no ", name, " (", layout_file,
                   " says ", layout.world_size, " ranks wrote parts)");
    std::map<std::string, torch::Tensor> mine;
    for (auto& [key, t] : load_tensor_dict(CheckpointStore::read(dir, name), what)) {
      const std::string prefix = kWholeEntryPrefix;
      if (r == 0 && key.rfind(prefix, 0) == 0) {  // buffers, parameters outside the units
        whole.emplace_back(key.substr(prefix.size()), t);
      } else {
        mine[key] = t;
      }
    }
    for (size_t i = 0; i < layout.flats.size(); ++i) {
      const auto it = mine.find(std::to_string(i));
      UT_CHECK_TRAIN(
          it != mine.end() && it->second.dim() == 1 && it->second.numel() == layout.flats[i].part,
          what, ": no part of ", layout.flats[i].part, " elements for flat ", i);
      parts[i].push_back(it->second);
    }
  }
  NamedTensors out;
  for (size_t i = 0; i < layout.flats.size(); ++i) {
    const ShardLayout::Flat& flat = layout.flats[i];
    const torch::Tensor whole = torch::cat(parts[i]);
    for (const ShardLayout::Member& m : flat.members) {
      int64_t numel = 1;
      for (int64_t d : m.shape) numel *= d;
      UT_CHECK_TRAIN(m.offset >= 0 && m.offset + numel <= flat.length, layout_file, ": ", m.name,
                     " lies outside its flat");
      out.emplace_back(m.name, whole.narrow(0, m.offset, numel).view(m.shape).clone());
    }
  }
  for (auto& entry : whole) out.push_back(std::move(entry));
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
  // Each flat's saved parts, by rank: views of the mapped files (read where touched).
  std::vector<std::vector<torch::Tensor>> parts(saved.flats.size());
  RecutParts out;
  for (int r = 0; r < saved.world_size; ++r) {
    const std::string name = file_of(r);
    const std::string what = dir + "/" + name;
    UT_CHECK_TRAIN(CheckpointStore::has(dir, name), dir, " has no ", name, " (", dir, "/",
                   files::kModelShards, " says ", saved.world_size, " ranks wrote parts)");
    std::map<std::string, torch::Tensor> mine;
    for (auto& [key, t] : map_tensor_dict(CheckpointStore::map(dir, name), what)) {
      const std::string prefix = kWholeEntryPrefix;
      if (r == 0 && key.rfind(prefix, 0) == 0) {
        out.whole.emplace_back(key.substr(prefix.size()), t);
      } else {
        mine[key] = t;
      }
    }
    for (size_t i = 0; i < saved.flats.size(); ++i) {
      const auto it = mine.find(std::to_string(i));
      UT_CHECK_TRAIN(
          it != mine.end() && it->second.dim() == 1 && it->second.numel() == saved.flats[i].part,
          what, ": no part of ", saved.flats[i].part, " elements for flat ", i);
      parts[i].push_back(it->second);
    }
  }
  for (size_t i = 0; i < layout.flats.size(); ++i) {
    const ShardLayout::Flat& flat = layout.flats[i];
    torch::Tensor mine = torch::zeros({flat.part}, parts[i][0].options());
    const int64_t start = rank * flat.part;
    const int64_t n = std::max<int64_t>(0, std::min(flat.part, flat.length - start));
    if (n > 0) copy_flat_range(parts[i], saved.flats[i].part, start, mine.narrow(0, 0, n));
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
