#include "unitrain/engine/step/process_step.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/run_position.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/engine/setup/reproducible_checks.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/setup/run_plan.h"
#include "unitrain/engine/step/pipeline_step.h"
#include "unitrain/engine/step/step_graph.h"
#include "unitrain/optim/optimizer.h"
#include "unitrain/parallel/chunked_norm.h"
#include "unitrain/parallel/data_parallel.h"
#include "unitrain/parallel/model_group_sync.h"
#include "unitrain/parallel/optimizer_sharding.h"
#include "unitrain/parallel/pipeline_stage.h"
#include "unitrain/parallel/reproducible_sync.h"
#include "unitrain/parallel/shard_module.h"
#include "unitrain/parallel/sharded_parameters.h"
#include "unitrain/parallel/sharded_sync.h"
#include "unitrain/parallel/tensor_parallel.h"
#include "unitrain/precision/master_weights.h"

namespace unitrain {

namespace {

/// Each of `params`' elements as the whole model counts them: a part of a tensor cut over a
/// tensor group of `parts` processes counts the whole tensor's (tp::splits_of `weights`).
std::vector<int64_t> whole_numels(const std::vector<torch::Tensor>& params,
                                  const torch::nn::Module& weights, int parts) {
  std::unordered_map<const void*, tp::Split> split_of;
  const auto named = weights.named_parameters();
  for (const auto& [name, split] : tp::splits_of(weights)) {
    split_of.emplace(named[name].unsafeGetTensorImpl(), split);
  }
  std::vector<int64_t> out;
  for (const auto& p : params) {
    const auto it = split_of.find(p.unsafeGetTensorImpl());
    if (it == split_of.end() || p.numel() == 0) {
      out.push_back(p.numel());
      continue;
    }
    const int64_t dim = it->second.dim < 0 ? it->second.dim + p.dim() : it->second.dim;
    out.push_back(p.numel() / p.size(dim) * tp::whole_size(it->second, p.size(dim), parts));
  }
  return out;
}

/// ZeRO 1's owner of each of `params` (the model's) under a cut model: drawn over `replicas`
/// from the whole tensors' sizes (the same on every process of a tensor group, whose parts of a
/// parameter's state are then on one replica), among those of this pipeline stage's (`stage`;
/// null: every one); -1 for another stage's.
std::vector<int> cut_model_owners(const std::vector<torch::Tensor>& params,
                                  const torch::nn::Module& weights, const ProcessGroup* tensor,
                                  const std::unordered_set<const void*>* stage, int replicas) {
  const std::vector<int64_t> sizes = whole_numels(params, weights, tp::size_of(tensor));
  auto mine = [stage](const torch::Tensor& p) {
    return stage == nullptr || stage->count(p.unsafeGetTensorImpl()) > 0;
  };
  std::vector<int64_t> here;
  for (size_t i = 0; i < params.size(); ++i) {
    if (mine(params[i])) here.push_back(params[i].requires_grad() ? sizes[i] : 0);
  }
  const std::vector<int> drawn = partition_by_size(here, replicas);
  std::vector<int> owners;
  for (size_t i = 0, j = 0; i < params.size(); ++i) {
    owners.push_back(mine(params[i]) ? drawn[j++] : -1);
  }
  return owners;
}

/// The owner of each of `params` that `owners` gives for `listed` (the gradient buckets'); -1
/// for those it does not list (another pipeline stage's).
std::vector<int> owners_of(const std::vector<torch::Tensor>& params,
                           const std::vector<torch::Tensor>& listed,
                           const std::vector<int>& owners) {
  std::unordered_map<const void*, int> owner_of;
  for (size_t i = 0; i < listed.size(); ++i) owner_of[listed[i].unsafeGetTensorImpl()] = owners[i];
  std::vector<int> out;
  for (const auto& p : params) {
    const auto it = owner_of.find(p.unsafeGetTensorImpl());
    out.push_back(it == owner_of.end() ? -1 : it->second);
  }
  return out;
}

/// The tensors the optimizer steps for `params`: themselves, or bf16-true's float32 masters
/// (in the same order).
std::vector<torch::Tensor> stepped_tensors(const std::vector<torch::Tensor>& params,
                                           const Precision& precision) {
  std::vector<torch::Tensor> out = params;
  if (const MasterWeights* masters = precision.masters()) {
    const auto named = masters->parameters();
    for (size_t i = 0; i < out.size(); ++i) out[i] = named[i].second;
  }
  return out;
}

}  // namespace

ProcessStep::ProcessStep(const StepParts& parts, torch::optim::Optimizer* trainers)
    : parts_(parts), device_(parts.device), divergence_(parts.settings.train.divergence) {
  const DistributedOptions& distributed = parts.settings.distributed;
  const bool manual = trainers == nullptr;
  const auto& group = parts.group;
  const bool shards = group && !manual;        // (the module's own optimizers are never sharded)
  std::vector<int> gradient_owners;            // ZeRO 2: each parameter's bucket owner, model order
  std::vector<torch::Tensor> gradient_params;  // theirs: a pipeline stage's alone
  check_reproducible_step(parts.settings, parts.module, trainers, group.get());
  // A pipeline stage runs its units through PipelineStep: never training_step whole.
  UT_CHECK(!parts.stage || !manual,
           "distributed.pipeline_parallel with a module that steps its own optimizers "
           "(configure_optimizers) is not built yet (its training_step would run the whole "
           "model); leave one of them out");
  std::unordered_set<const void*> stage_params;  // a pipeline stage's units' parameters
  if (parts.stage) {
    const auto units = parts.module.units();
    for (size_t u = parts.stage->first_unit(); u < parts.stage->end_unit(); ++u) {
      UT_CHECK(u < units.size(), "pipeline stage ", parts.stage->stage(), ": unit ", u,
               " of a module that lists ", units.size());
      for (const auto& p : units[u]) stage_params.insert(p.unsafeGetTensorImpl());
    }
    for (const auto& s : parts.stage->shared()) stage_params.insert(s.param.unsafeGetTensorImpl());
  }
  // distributed.reproducible over a cut model: the norm over the whole model, a cut layer's
  // gradient chunk by chunk and each stage's its own (ChunkedNorm), taken by the innermost sync.
  const bool whole_norm = distributed.reproducible_on() &&
                          (distributed.reproducible_chunks > 1 || parts.stage != nullptr);
  if (distributed.reproducible_on() && !(group && distributed.zero == 3)) {
    std::vector<torch::Tensor> params;  // (a pipeline stage's own)
    for (const auto& p : parts.module.weights().parameters()) {
      if (!parts.stage || stage_params.count(p.unsafeGetTensorImpl())) params.push_back(p);
    }
    auto reproducible = std::make_unique<ReproducibleSync>(
        group, params, static_cast<int>(distributed.reproducible));
    if (whole_norm) {
      auto norm = std::make_shared<ChunkedNorm>(parts.module.weights(), parts.tensor_group,
                                                parts.stage ? parts.stage->group_ptr() : nullptr);
      reproducible->measure_norm_with([norm] { return norm->norm(); });
    }
    sync_ = std::move(reproducible);
  } else if (!group) {
    sync_ = std::make_unique<NoGradientSync>();
  } else if (distributed.zero == 3 && !manual) {  // each unit reduces its own gradients
    sync_ = std::make_unique<ShardedSync>(group);
  } else {
    DataParallelOptions dp = distributed.data_parallel_options();
    // A pipeline stage's replicas reduce the gradients of its own units' parameters.
    std::vector<torch::Tensor> params;
    for (const auto& p : parts.module.weights().named_parameters()) {
      if (parts.stage && !stage_params.count(p.value().unsafeGetTensorImpl())) continue;
      dp.names.push_back(p.key());
      params.push_back(p.value());
    }
    dp.gradient_views = !manual;  // the module's optimizers zero their gradients themselves
    if (distributed.zero == 2) {  // (its precisions are checked at fit()'s start)
      gradient_owners = parts.tensor_group
                            ? bucket_owners(params, group->world_size(),
                                            whole_numels(params, parts.module.weights(),
                                                         parts.tensor_group->world_size()))
                            : bucket_owners(params, group->world_size());
      dp.owners = gradient_owners;
      gradient_params = params;
    }
    sync_ = std::make_unique<DataParallelSync>(group, params, dp);
  }
  if (parts.tensor_group) {  // distributed.tensor_parallel: the replicas' sync inside
    const auto named = parts.module.weights().named_parameters();
    std::vector<torch::Tensor> cut;
    for (const auto& [name, split] : tp::splits_of(parts.module.weights())) {
      cut.push_back(named[name]);
    }
    auto cut_sync =
        std::make_unique<ModelGroupSync>(std::move(sync_), parts.tensor_group, std::move(cut));
    if (whole_norm) cut_sync->take_norm_from_inner();
    // A tied head's embeddings on a pipeline's last stage: counted by the first stage's norm.
    if (parts.stage) {
      for (const auto& s : parts.stage->shared()) {
        if (parts.stage->stage() != s.owner) cut_sync->count_elsewhere(s.param);
      }
    }
    sync_ = std::move(cut_sync);
  }
  if (parts.stage) {  // distributed.pipeline_parallel: the stage's sync inside
    auto staged = std::make_unique<ModelGroupSync>(std::move(sync_), parts.stage->group_ptr());
    for (const auto& s : parts.stage->shared()) {  // a tied head: counted on the owner's stage
      staged->add_shared(s.param, s.group, parts.stage->stage() == s.owner);
    }
    if (whole_norm) staged->take_norm_from_inner();
    sync_ = std::move(staged);
    pipeline_ = std::make_unique<PipelineStep>(parts.module, parts.stage, device_,
                                               distributed.reproducible_on());
  }
  if (shards && distributed.zero == 3) {
    sharded_params_ = shard_module(
        group, parts.module, *trainers, parts.precision.masters(), distributed.unit_min_params,
        distributed.prefetches(device_.is_cuda()), static_cast<int>(distributed.reproducible));
    if (distributed.reproducible_on()) {
      static_cast<ShardedSync&>(*sync_).order_losses(static_cast<int>(distributed.reproducible));
      static_cast<ShardedSync&>(*sync_).measure_norm_with(
          [params = sharded_params_] { return params->reproducible_norm(); });
    }
  }
  runner_ = std::make_unique<StepRunner>(parts.module, trainers, parts.settings.train, *sync_,
                                         parts.callbacks, parts.precision, parts.profiler);
  // Under distributed.reproducible gradients are whole on every replica: ZeRO 2's partitions
  // are ZeRO 1's.
  const bool zero1 =
      distributed.zero == 1 || (distributed.zero == 2 && distributed.reproducible_on());
  if (shards && zero1 && (parts.tensor_group || parts.stage)) {
    const std::vector<torch::Tensor> params = parts.module.weights().parameters();
    sharding_ = std::make_unique<OptimizerSharding>(
        group, *trainers, stepped_tensors(params, parts.precision),
        cut_model_owners(params, parts.module.weights(), parts.tensor_group.get(),
                         parts.stage ? &stage_params : nullptr, group->world_size()),
        1);
  } else if (shards && zero1) {
    sharding_ = std::make_unique<OptimizerSharding>(group, *trainers);
  } else if (shards && distributed.zero == 2) {  // the buckets' owners (-1: another stage's)
    const std::vector<torch::Tensor> params = parts.module.weights().parameters();
    sharding_ = std::make_unique<OptimizerSharding>(
        group, *trainers, params, owners_of(params, gradient_params, gradient_owners), 2);
  }
  if (sharding_) runner_->shard(sharding_.get());
  if (pipeline_) runner_->pipe(pipeline_.get());
  if (divergence_.watches_spikes()) runner_->watch(&divergence_);
  broadcast_buffers_ =
      group && distributed.broadcast_buffers && !parts.module.weights().buffers().empty();
}

ProcessStep::~ProcessStep() = default;

void ProcessStep::capture_steps(const RunPlan& plan, const Callback* hooking) {
  GraphFacts facts;
  facts.cuda = device_.is_cuda();
  facts.cuda_build = step_graphs_built();
  facts.world = plan.world;
  facts.accumulation = plan.accumulation;
  facts.precision = parts_.precision.mode();
  torch::optim::Optimizer* trainers = runner_->optimizer();
  facts.manual = trainers == nullptr;
  if (trainers) facts.optimizer_refusal = capture_refusal(*trainers);
  facts.hooking = hooking;
  facts.short_batches = !plan.drop_last && plan.epoch_size % plan.batch_size != 0;
  facts.profiling = parts_.settings.profile.enabled;
  const std::string why = step_graph_refusal(parts_.settings.train, facts);
  if (!why.empty()) throw ConfigError(why);
  graph_ = std::make_unique<StepGraph>(*runner_, *trainers, device_);
}

bool ProcessStep::replays() const { return graph_ && !graph_->eager(); }

MicroStep ProcessStep::forward_backward(const Batch& batch, double weight, bool window_start,
                                        bool window_end, StepDecision mine, int64_t step) {
  if (broadcast_buffers_ && window_start) {
    unitrain::broadcast_buffers(*parts_.group, parts_.module.weights());
  }
  return runner_->forward_backward(on_device(batch, device_, device_batch_), weight, window_end,
                                   mine, step);
}

MicroStep ProcessStep::replay(const Batch& batch, StepDecision mine, int64_t step) {
  return graph_->step(on_device(batch, device_, device_batch_), mine, step);
}

void ProcessStep::end_window(MicroStep& m, int64_t step, RunPosition& position,
                             const std::function<void()>& before_update) {
  position.enter("gradient sync");
  runner_->sync_gradients(m, step);  // the ranks agree on the step's decisions
  position.enter("clip");
  runner_->clip_gradients(m, step);
  position.enter("optimizer");
  before_update();
  runner_->update(m, step);                                      // optimizer step, zero grads
  if (graph_ && m.rollback.empty()) graph_->count_eager_step();  // (rolled back: not taken)
}

}  // namespace unitrain
