#include "unitrain/engine/setup/pipeline_cut.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/core/unit_parts.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/parallel_plan.h"
#include "unitrain/parallel/pipeline_stage.h"

namespace unitrain {

void check_model_cut(const RunSettings& settings) {
  const DistributedOptions& d = settings.distributed;
  if (d.tensor_parallel == 1 && d.pipeline_parallel == 1) return;
  const std::string plan =
      d.pipeline_parallel == 1
          ? fmt::format("distributed.tensor_parallel: {}", d.tensor_parallel)
          : fmt::format("distributed.pipeline_parallel: {}", d.pipeline_parallel);
  UT_CHECK(d.zero == 0, "distributed.zero: ", d.zero, " with ", plan,
           " is not built yet (the replicas would shard parameters that are themselves "
           "parts); use distributed.zero: 0, or data parallelism alone");
  UT_CHECK(settings.train.precision != PrecisionMode::Bf16True, "train.precision: bf16-true with ",
           plan,
           " is not built yet (the float32 masters the optimizer steps are not cut with their "
           "parameters); use bf16-mixed");
  UT_CHECK(!d.reproducible_on(), "distributed.reproducible with ", plan,
           " is not built yet (the sums over the cut model are not kept in a fixed order); "
           "leave one of them out");
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
  UT_CHECK(!module.checkpoints_trainable_only(),
           "distributed.pipeline_parallel with model.lora "
           "is not built yet (the frozen base would be cut with its stages); leave one of them "
           "out");
  const auto units = module.units();
  const auto& cuts = settings.distributed.pipeline_cuts;
  const std::vector<size_t> starts = cuts.empty()
                                         ? balanced_stage_starts(module.unit_costs(), plan.pipeline)
                                         : named_stage_starts(cuts, units.size(), plan.pipeline);
  auto stage = std::make_shared<PipelineStage>(plan.pipe, starts, units.size());
  // Every unit's parameters belong to its stage alone: a tensor two units share (a head tied
  // to the embeddings) cannot be cut.
  std::vector<const void*> seen;
  for (size_t u = 0; u < units.size(); ++u) {
    for (const auto& p : units[u]) {
      const void* impl = p.unsafeGetTensorImpl();
      for (const void* s : seen) {
        UT_CHECK(s != impl, "distributed.pipeline_parallel: unit ", u,
                 " of the model shares a parameter with an earlier unit (a head tied to the "
                 "embeddings?); train it with pipeline_parallel: 1");
      }
      seen.push_back(impl);
      if (u < stage->first_unit() || u >= stage->end_unit()) free_tensor_memory(p);
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
