#include "unitrain/parallel/shard_module.h"

#include <torch/torch.h>

#include <map>

#include "unitrain/compat/optimizer_state_key.h"
#include "unitrain/core/error.h"
#include "unitrain/core/memory.h"
#include "unitrain/core/optimizer_state_serializer.h"
#include "unitrain/core/train_module.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/parallel/sharded_unit_runner.h"
#include "unitrain/precision/master_weights.h"

namespace unitrain {

std::vector<int> join_small_units(const std::vector<std::vector<torch::Tensor>>& units,
                                  int64_t min_params) {
  std::vector<int> out;
  int joined = 0;
  int64_t open = 0;  // parameters of the joined unit being filled
  for (const auto& unit : units) {
    out.push_back(joined);
    for (const auto& p : unit) open += p.numel();
    if (open >= min_params) {
      ++joined;
      open = 0;
    }
  }
  if (open > 0 && joined > 0) {  // the last units, too small together: they join the one before
    for (int& j : out) {
      if (j == joined) j = joined - 1;
    }
  }
  return out;
}

std::shared_ptr<ShardedParameters> shard_module(std::shared_ptr<ProcessGroup> group,
                                                TrainModule& module,
                                                torch::optim::Optimizer& optimizer,
                                                MasterWeights* masters, int64_t unit_min_params,
                                                bool prefetch, int micro_shards) {
  const std::vector<std::vector<torch::Tensor>> units = module.units();
  UT_CHECK(!units.empty(),
           "distributed.zero: 3 shards a model by its units (its embeddings, each block, its "
           "head), but this one has none: the built-in transformer_lm and Hugging Face families "
           "(gpt2, llama, ...) have them, a "
           "C++ module "
           "lists them in TrainModule::units() (docs/distributed.md, \"Sharded parameters\"); "
           "use distributed.zero: 2 for this model");
  std::map<const void*, std::string> names;
  for (const auto& p : module.weights().named_parameters()) {
    names[p.value().unsafeGetTensorImpl()] = p.key();
  }
  std::map<const void*, int> group_of;
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const auto& p : optimizer.param_groups()[g].params()) {
      group_of[p.unsafeGetTensorImpl()] = static_cast<int>(g);
    }
  }
  const std::vector<int> joined = join_small_units(units, unit_min_params);
  std::vector<torch::Tensor> params;
  std::vector<std::string> param_names;
  std::vector<int> unit_of, key_of;
  std::map<const void*, int> seen;
  for (size_t u = 0; u < units.size(); ++u) {
    for (const auto& p : units[u]) {
      const void* impl = p.unsafeGetTensorImpl();
      const auto name = names.find(impl);
      UT_CHECK(name != names.end(), "distributed.zero: 3: unit ", u,
               " of the model lists a tensor that is not one of its parameters");
      UT_CHECK(seen.emplace(impl, static_cast<int>(u)).second, "distributed.zero: 3: parameter ",
               name->second, " is in units ", seen[impl], " and ", u, "; each is in one");
      const auto g = group_of.find(impl);
      params.push_back(p);
      param_names.push_back(name->second);
      unit_of.push_back(joined[u]);
      key_of.push_back(g == group_of.end() ? -1 : g->second);
    }
  }
  for (const auto& [impl, g] : group_of) {
    UT_CHECK(seen.count(impl), "distributed.zero: 3: the optimizer trains parameter ",
             names.count(impl) ? names[impl] : std::string("(not the model's)"),
             ", which none of the model's units lists");
  }
  auto sharded =
      std::make_shared<ShardedParameters>(group, params, unit_of, key_of, param_names,
                                          ProcessGroup::ReduceScatterBy::PartReduces, micro_shards);
  if (micro_shards > 0) {  // the norm's order: the model's parameters that train, in order
    std::map<const void*, int64_t> trained;
    for (const auto& p : module.weights().parameters()) {
      if (p.requires_grad()) trained.emplace(p.unsafeGetTensorImpl(), int64_t(trained.size()));
    }
    std::vector<int64_t> order;
    for (const auto& p : params) {
      const auto it = trained.find(p.unsafeGetTensorImpl());
      order.push_back(it == trained.end() ? -1 : it->second);
    }
    sharded->order_norm_by(std::move(order));
  }
  // A model built in parts: a parameter it kept outside the units (frozen ones) whole again.
  restore_kept_parts(*group, module.weights().parameters());
  if (masters != nullptr) {
    std::map<std::string, torch::Tensor> whole;
    for (const auto& [name, t] : masters->parameters()) whole[name] = t;
    masters->shard(sharded->shards(),
                   sharded->cut(whole, "bf16-true's master weights", torch::kFloat32));
  }
  // The optimizer steps the shards, each in the group its parameters were in.
  const std::vector<int> keys = sharded->shard_keys();
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    std::vector<torch::Tensor>& group_params = optimizer.param_groups()[g].params();
    group_params.clear();
    for (size_t s = 0; s < keys.size(); ++s) {
      if (keys[s] == static_cast<int>(g)) group_params.push_back(sharded->shards()[s]);
    }
  }
  optimizer.state().clear();
  const OptimizerStateSerializer* type = optimizer_state_serializers::find(optimizer);
  if (type != nullptr && type->initial_state) {
    // An optimizer that makes its state when built (Adagrad): again, for the shards.
    for (auto& g : optimizer.param_groups()) {
      for (const auto& p : g.params()) {
        optimizer.state()[optimizer_state_key(p)] = type->initial_state(p, g.options());
      }
    }
  }
  module.set_unit_runner(std::make_shared<ShardedUnitRunner>(sharded, joined, prefetch));
  // The whole model this rank built is cut into its parts: what it freed goes back to the
  // kernel instead of staying in the process (keep_freed_memory keeps it for the steps' reuse).
  release_freed_memory();
  return sharded;
}

void unshard_module(TrainModule& module, ShardedParameters& sharded) {
  module.set_unit_runner(nullptr);
  for (const torch::Tensor& shard : sharded.shards()) {
    torch::Tensor s = shard;
    s.mutable_grad() = torch::Tensor();
  }
  release_freed_memory();  // so that the whole model takes their place rather than adds to it
  sharded.unshard();
}

}  // namespace unitrain
