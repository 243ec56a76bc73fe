#include "unitrain/engine/setup/pipeline_cut.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/unit_parts.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/parallel_plan.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {

namespace {

/// frozen_fingerprint of `module`'s whole frozen parameters (a tensor group's parts joined
/// over it: a collective of the group).
std::string whole_base_fingerprint(TrainModule& module, const ParallelPlan& plan) {
  torch::nn::Module& weights = module.weights();
  std::unordered_map<std::string, tp::Split> splits;
  if (plan.tensor_group) {
    for (auto& [name, split] : tp::splits_of(weights)) splits.emplace(name, split);
  }
  NamedTensors whole;
  for (const auto& p : weights.named_parameters()) {
    if (p.value().requires_grad()) continue;
    const auto it = splits.find(p.key());
    whole.emplace_back(p.key(), it == splits.end() ? p.value().detach()
                                                   : tp::whole_of(p.value().detach(), it->second,
                                                                  *plan.tensor_group));
  }
  return frozen_fingerprint(weights, &whole);
}

}  // namespace

void check_model_cut(const RunSettings& settings) {
  const DistributedOptions& d = settings.distributed;
  if (d.tensor_parallel == 1 && d.pipeline_parallel == 1) return;
  const std::string plan =
      d.pipeline_parallel == 1
          ? fmt::format("distributed.tensor_parallel: {}", d.tensor_parallel)
          : fmt::format("distributed.pipeline_parallel: {}", d.pipeline_parallel);
  // ZeRO 1 and 2 shard each stage's (tensor group's) parts over its replicas; ZeRO 3 not yet
  // (ZeRO 2 with a head tied across stages: cut_into_stages refuses it).
  UT_CHECK(d.zero <= 2, "distributed.zero: ", d.zero, " with ", plan,
           " is not built yet (the units it gathers whole are themselves parts); use "
           "distributed.zero: 1 or 2");
  UT_CHECK(d.pipeline_parallel == 1 || settings.train.precision != PrecisionMode::Bf16True,
           "train.precision: bf16-true with ", plan,
           " is not built yet (the float32 masters would be made of the other stages' "
           "parameters, whose memory is given back); use bf16-mixed");
  // distributed.reproducible over a cut model: the cut layers in chunks (pipeline stages need
  // none: each stage's micro-shards are summed in shard order as data parallelism's are).
  const std::string tensor = fmt::format("distributed.tensor_parallel: {}", d.tensor_parallel);
  UT_CHECK(!d.reproducible_on() || d.tensor_parallel == 1 || d.reproducible_chunks > 1,
           "distributed.reproducible with ", tensor,
           " needs distributed.reproducible_chunks: C fixed chunks of the cut layers (a multiple "
           "of ",
           d.tensor_parallel, ", e.g. ", 2 * d.tensor_parallel,
           "), the same bits on any tensor_parallel dividing C; run the one-process reference "
           "with the same C");
  UT_CHECK(!d.reproducible_on() || d.reproducible_chunks % d.tensor_parallel == 0,
           "distributed.reproducible_chunks: ", d.reproducible_chunks, " is not divisible by ",
           tensor, "; use a multiple of it");
  if (d.pipeline_parallel == 1) return;
  const TrainOptions& t = settings.train;
  UT_CHECK(!t.cuda_graphs, "train.cuda_graphs with ", plan,
           " is not built yet (a step waits on the other stages); leave one of them out");
  UT_CHECK(!t.divergence.spike_factor, "train.divergence.spike_factor with ", plan,
           " is not built yet (the loss lives on the last stage alone); leave one of them out");
}

std::shared_ptr<PipelineStage> cut_into_stages(TrainModule& module, const ParallelPlan& plan,
                                               const RunSettings& settings) {
  if (plan.pipeline == 1) return nullptr;
  if (auto why = module.stage_refusal()) throw ConfigError(*why);
  const auto units = module.units();
  const auto& cuts = settings.distributed.pipeline_cuts;
  const std::vector<size_t> starts = cuts.empty()
                                         ? balanced_stage_starts(module.unit_costs(), plan.pipeline)
                                         : named_stage_starts(cuts, units.size(), plan.pipeline);
  auto stage = std::make_shared<PipelineStage>(plan.pipe, starts, units.size());
  stage->partitions = plan.partitions;
  // model.lora: the frozen base's fingerprint, taken while this process holds all of it.
  if (module.checkpoints_trainable_only())
    stage->base_fingerprint = whole_base_fingerprint(module, plan);
  // Each parameter belongs to the unit that lists it (units() lists each once); a unit of
  // another stage that uses it too (a head tied to the embeddings) holds it beside.
  std::unordered_map<const void*, size_t> unit_of;
  for (size_t u = 0; u < units.size(); ++u) {
    for (const auto& p : units[u]) {
      UT_CHECK(unit_of.emplace(p.unsafeGetTensorImpl(), u).second,
               "distributed.pipeline_parallel: unit ", u,
               " of the model lists a parameter an earlier unit lists (units() must list each "
               "once; TrainModule::borrowed_parameters names those a unit uses beside)");
    }
  }
  std::unordered_set<const void*> held;
  std::map<std::pair<int, int>, std::shared_ptr<ProcessGroup>> pairs;
  for (const auto& [unit, p] : module.borrowed_parameters()) {
    const auto owned = unit_of.find(p.unsafeGetTensorImpl());
    UT_CHECK(owned != unit_of.end() && unit < units.size(),
             "distributed.pipeline_parallel: a borrowed parameter that no unit lists, or unit ",
             unit, " of ", units.size(), " (TrainModule::borrowed_parameters)");
    const int owner = stage->stage_of(owned->second), borrower = stage->stage_of(unit);
    // (Every process sees every tied pair: all refuse alike.)
    UT_CHECK(owner == borrower || settings.distributed.zero != 2 || plan.data_size() == 1,
             "distributed.zero: 2 with distributed.pipeline_parallel and a head tied to the "
             "embeddings of another stage is not built yet (the two stages' replicas would "
             "reduce its gradient to different owners); use distributed.zero: 1, or untie it "
             "(tie_word_embeddings: false)");
    UT_CHECK(owner == borrower || !settings.distributed.reproducible_on(),
             "distributed.reproducible with distributed.pipeline_parallel and a head tied to the "
             "embeddings of another stage is not built yet (each micro-shard's two halves of "
             "its gradient would be added after the shards' sums, not before); untie it "
             "(tie_word_embeddings: false), or leave one of them out");
    if (owner == borrower || (stage->stage() != owner && stage->stage() != borrower)) continue;
    held.insert(p.unsafeGetTensorImpl());
    auto& group = pairs[{owner, borrower}];
    if (!group) {
      std::vector<int> members{stage->rank_of(owner), stage->rank_of(borrower)};
      std::sort(members.begin(), members.end());
      group = plan.pipe->subgroup(fmt::format("shared-{}-{}", owner, borrower), members);
    }
    stage->add_shared({p, owner, borrower, group});
  }
  for (size_t u = 0; u < units.size(); ++u) {
    if (u >= stage->first_unit() && u < stage->end_unit()) continue;
    for (const auto& p : units[u]) {
      if (!held.count(p.unsafeGetTensorImpl())) free_tensor_memory(p);
    }
  }
  std::string layout;
  for (size_t s = 0; s < starts.size(); ++s) {
    const size_t end = s + 1 < starts.size() ? starts[s + 1] : units.size();
    layout += fmt::format("{}{}-{}", s ? ", " : "", starts[s], end - 1);
  }
  log::info(fmt::format(
      "pipeline parallel: {} stages over the model's {} units (stage: units {}), {} data-parallel "
      "replica{}; this process: stage {} (units {} to {}){}",
      plan.pipeline, units.size(), layout, plan.data_size(), plan.data_size() == 1 ? "" : "s",
      stage->stage(), stage->first_unit(), stage->end_unit() - 1,
      stage->last() ? ", the loss" : ""));
  return stage;
}

}  // namespace unitrain
