// distributed.zero: 3's model in a checkpoint: model-shards.json (the layout) and each rank's
// model-shard-rank-<R>.pt ("<i>": its part of flat i; "grad.<i>": that part's gradient when
// saved inside an accumulation window; rank 0's also "whole.<name>": the buffers and parameters
// outside the units).
#include <torch/torch.h>

#include <map>
#include <set>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/train_state.h"
#include "unitrain/engine/checkpoint_entries.h"
#include "unitrain/engine/rank_files.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/sharded_parameters.h"

namespace unitrain {
namespace files = checkpoint_files;
namespace {

constexpr const char* kGradPrefix = "grad.";

std::map<std::string, torch::Tensor> by_name(NamedTensors tensors) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, t] : tensors) out[name] = std::move(t);
  return out;
}

class ShardedModelEntry : public CheckpointEntry {
 public:
  ShardedModelEntry(TrainModule& module, ShardedParameters& params, ProcessGroup& group,
                    const TrainState& counters, std::string root)
      : module_(module),
        params_(params),
        group_(group),
        counters_(counters),
        root_(std::move(root)) {}

  void save(CheckpointWrite& out) override {
    const ShardLayout layout = params_.layout();
    auto mine = std::make_shared<NamedTensors>();
    const auto& shards = params_.shards();
    for (size_t i = 0; i < shards.size(); ++i) {
      mine->emplace_back(std::to_string(i), shards[i].detach().to(torch::kCPU).clone());
    }
    if (counters_.micro_in_window != 0) {
      for (size_t i = 0; i < shards.size(); ++i) {
        if (shards[i].grad().defined()) {
          mine->emplace_back(kGradPrefix + std::to_string(i),
                             shards[i].grad().to(torch::kCPU).clone());
        }
      }
    }
    if (group_.rank() == 0) {
      for (auto& [name, t] : outside_units(layout)) {
        mine->emplace_back(std::string(kWholeEntryPrefix) + name, t.detach().to(torch::kCPU).clone());
      }
    }
    std::vector<CheckpointFile> parts =
        write_rank_files(group_, root_, out.state.state.step, "model", "part of the model",
                         files::model_shard, [mine] { return save_tensor_dict(*mine); });
    if (!out.writes) return;
    out.add(files::kModelShards, layout.to_json());
    out.files.push_back({files::model_shard(0), {}, [mine] { return tensor_dict_image(*mine); }});
    for (CheckpointFile& f : parts) out.files.push_back(std::move(f));
  }

  void restore(const CheckpointRead& in) override {
    const ShardLayout layout = params_.layout();
    const auto outside = outside_units(layout);
    std::map<std::string, torch::Tensor> whole;  // the values of `outside`, by name
    if (in.has(files::kModelShards)) {
      const std::vector<char> text = in.read(files::kModelShards);
      const ShardLayout saved =
          ShardLayout::from_json({text.begin(), text.end()}, in.path(files::kModelShards));
      if (saved.world_size == layout.world_size && saved.same_flats(layout)) {
        const std::map<std::string, torch::Tensor> own = restore_own_parts(in);
        if (!outside.empty()) {  // rank 0's file holds them: read it once, on the others too
          const std::string first = files::model_shard(0);
          const auto from = in.rank == 0 ? own
                                         : by_name(load_tensor_dict(in.read(first), in.path(first)));
          for (const auto& [name, t] : from) {
            const std::string prefix = kWholeEntryPrefix;
            if (name.rfind(prefix, 0) == 0) whole[name.substr(prefix.size())] = t;
          }
        }
      } else {
        UT_CHECK_TRAIN(counters_.micro_in_window == 0, in.dir,
                       " was saved inside an accumulation window by ", saved.world_size,
                       " processes with other parts; resume it with ", saved.world_size,
                       " processes and the same distributed.zero and optimizer groups");
        whole = by_name(merge_model_shards(in.dir));  // (with the whole.<name> entries)
        params_.load_whole(whole, in.dir);
      }
    } else {  // a checkpoint of a run without distributed.zero: 3
      whole = by_name(load_tensor_dict(in.read(files::kModel), in.path(files::kModel)));
      params_.load_whole(whole, in.path(files::kModel));
    }
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : outside) {
      const auto it = whole.find(name);
      UT_CHECK_TRAIN(it != whole.end(), in.dir, " holds no ", name);
      t.copy_(it->second);
    }
  }

 private:
  /// This rank's own file (the same layout and world size) into its parts; the file's entries.
  std::map<std::string, torch::Tensor> restore_own_parts(const CheckpointRead& in) {
    const std::string name = files::model_shard(in.rank);
    std::map<std::string, torch::Tensor> own =
        by_name(load_tensor_dict(in.read(name), in.path(name)));
    torch::NoGradGuard no_grad;
    const auto& shards = params_.shards();
    for (size_t i = 0; i < shards.size(); ++i) {
      const auto it = own.find(std::to_string(i));
      UT_CHECK_TRAIN(it != own.end() && it->second.numel() == shards[i].numel(), in.path(name),
                     " has no part of ", shards[i].numel(), " elements for flat ", i);
      torch::Tensor shard = shards[i];
      shard.copy_(it->second);
      const auto grad = own.find(kGradPrefix + std::to_string(i));
      if (grad != own.end()) shard.mutable_grad() = grad->second.to(shard.options()).clone();
    }
    return own;
  }

  /// The module's buffers and the parameters no unit holds, by name.
  std::vector<std::pair<std::string, torch::Tensor>> outside_units(const ShardLayout& layout) {
    std::set<std::string> sharded;
    for (const auto& f : layout.flats) {
      for (const auto& m : f.members) sharded.insert(m.name);
    }
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& p : module_.weights().named_parameters()) {
      if (!sharded.count(p.key())) out.emplace_back(p.key(), p.value());
    }
    for (const auto& b : module_.weights().named_buffers()) out.emplace_back(b.key(), b.value());
    return out;
  }

  TrainModule& module_;
  ShardedParameters& params_;
  ProcessGroup& group_;
  const TrainState& counters_;
  std::string root_;
};

}  // namespace

CheckpointEntryPtr sharded_model_entry(TrainModule& module, ShardedParameters& params,
                                       ProcessGroup& group, const TrainState& counters,
                                       std::string root) {
  return std::make_unique<ShardedModelEntry>(module, params, group, counters, std::move(root));
}

}  // namespace unitrain
