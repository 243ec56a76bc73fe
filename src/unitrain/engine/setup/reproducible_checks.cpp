#include "unitrain/engine/setup/reproducible_checks.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/parallel/micro_shard_layout.h"
#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/tensor_parallel.h"
#include "unitrain/threads/thread_governor.h"

namespace unitrain {

void check_reproducible(const RunSettings& settings, int world) {
  const DistributedOptions& d = settings.distributed;
  UT_CHECK(d.reproducible_chunks == 0 || d.reproducible_on(),
           "distributed.reproducible_chunks: ", d.reproducible_chunks,
           " without distributed.reproducible: the chunks only fix the order of its sums; set "
           "distributed.reproducible too, or leave the chunks out");
  if (!d.reproducible_on()) return;
  // The data-parallel replicas share the micro-shards (a tensor group or a pipeline's stages
  // run one replica's together).
  world = std::max<int>(1, world / static_cast<int>(d.tensor_parallel * d.pipeline_parallel));
  const TrainOptions& train = settings.train;
  const int64_t g = d.reproducible;
  UT_CHECK(g <= (int64_t(1) << 20), "distributed.reproducible: ", g,
           " micro-shards per step is more than this trainer plans for (2^20)");
  (void)MicroShardLayout(0, static_cast<int>(g), world, 0);  // W must divide G: named there
  UT_CHECK(!train.cuda_graphs,
           "distributed.reproducible with train.cuda_graphs: a captured step "
           "is one process's whole step; set train.cuda_graphs: false");
  const int64_t steps = g / world;
  UT_CHECK(train.accumulation_steps == 1 || train.accumulation_steps == steps,
           "train.accumulation_steps is ", train.accumulation_steps,
           ", but distributed.reproducible: ", g, " on ", world, " processes makes ", steps,
           " micro-steps per optimizer step; leave train.accumulation_steps at 1 (the micro-shards "
           "set it)");
  const int64_t batch = settings.loader.batch_size_;
  UT_CHECK(!train.global_batch_size || *train.global_batch_size == g * batch,
           "train.global_batch_size is ", train.global_batch_size.value_or(0),
           ", but distributed.reproducible: ", g, " micro-shards of data.loader.batch_size ", batch,
           " make a step of ", g * batch, " samples; give only one of them");
  // Given (train.threads, or OMP_NUM_THREADS), not chosen by auto: as a fit will choose it.
  const ThreadCount threads =
      choose_thread_count(train.threads, std::getenv("OMP_NUM_THREADS"), 1, 1.0, 0);
  UT_CHECK(!threads.automatic,
           "distributed.reproducible needs a fixed intra-op thread count: train.threads: auto "
           "picks by the CPUs and processes of each machine, and a different count sums some "
           "reductions in another order; set train.threads (e.g. 1), the same on every world "
           "size you run at");
}

void check_reproducible_step(const RunSettings& settings, TrainModule& module,
                             const torch::optim::Optimizer* trainers, const ProcessGroup* group) {
  if (!settings.distributed.reproducible_on()) return;
  UT_CHECK(trainers != nullptr,
           "distributed.reproducible with manual optimization (the module "
           "steps its own optimizers): the trainer cannot sum its gradients in shard order; use "
           "the Trainer's optimizer, or distributed.reproducible: 0");
  UT_CHECK(!needs_closure(*trainers),
           "distributed.reproducible with an optimizer that "
           "re-evaluates the loss (L-BFGS): each evaluation is a whole step; use another "
           "optimizer, or distributed.reproducible: 0");
  if (settings.distributed.tensor_parallel > 1) {  // parts of parameters, of T's sizes
    const std::string refusal = elementwise_step_refusal(*trainers);
    UT_CHECK(refusal.empty(),
             "distributed.reproducible with distributed.tensor_parallel needs optimizer.type adam "
             "or adamw with args.fused: true and no amsgrad: each process steps its parts of the "
             "parameters, and only the fused step rounds each element alike wherever it falls (",
             refusal, ")");
  }
  if (group && group->world_size() > 1 && settings.distributed.zero == 3) {
    const std::string refusal = elementwise_step_refusal(*trainers);
    UT_CHECK(refusal.empty(),
             "distributed.reproducible with distributed.zero: 3 needs "
             "optimizer.type adam or adamw with args.fused: true and no amsgrad: ZeRO 3 steps "
             "parts of flat buffers, and only the fused step rounds each element alike wherever "
             "it falls (",
             refusal, "); or use distributed.zero 0, 1 or 2");
  }
  // distributed.reproducible_chunks: every parallel layer built in C chunks (inside a
  // tp::BuildScope of C), or the run would depend on T after all.
  if (const int64_t c = settings.distributed.reproducible_chunks; c > 1) {
    const int64_t mine = c / std::max<int64_t>(1, settings.distributed.tensor_parallel);
    for (const auto& [name, split] : tp::splits_of(module.weights())) {
      UT_CHECK(split.chunks == mine, "distributed.reproducible_chunks: ", c,
               ", but the parallel "
               "layer of ",
               name, " computes in ", split.chunks * settings.distributed.tensor_parallel,
               " chunks (0: none); build the model's parallel layers inside tp::BuildScope(group, ",
               c, ")");
    }
  }
  for (const auto& m : module.weights().modules(/*include_self=*/true)) {
    const std::string name = m->name();
    UT_CHECK(name.find("BatchNorm") == std::string::npos,
             "distributed.reproducible with a batch-norm layer (", name,
             "): its statistics would be each micro-shard's and its running ones each rank's; "
             "use a layer norm or group norm, or distributed.reproducible: 0");
  }
}

}  // namespace unitrain
