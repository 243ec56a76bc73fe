#pragma once
// The checkpoint entries of a training run, one per part of its state. Each saves its files (or
// fields of trainer_state.json) and restores them; the Trainer lists them in its checkpoints.
#include <map>
#include <string>

#include "unitrain/engine/checkpoint_entry.h"

namespace torch::optim {
class Optimizer;
}
namespace torch::nn {
class Module;
}

namespace unitrain {

class CallbackList;
class ParameterState;
class LrController;
class MasterWeights;
class OptimizerSharding;
class Precision;
class ProcessGroup;
class ShardedParameters;
class TrainModule;
struct TensorCut;
struct TrainState;

/// model.pt: the model's state_dict (bf16-true: the float32 master weights); with `cut`
/// (distributed.tensor_parallel) its tensors whole, made so by the writer's tensor group, and cut
/// again when read.
CheckpointEntryPtr model_entry(TrainModule& module, Precision& precision,
                               const TensorCut* cut = nullptr);
/// optimizer.pt, or with ZeRO (`sharding`) one optimizer-rank-<R>.pt per rank: the ranks other
/// than 0 write theirs beside the checkpoints under `root` and rank 0 moves them in.
/// With distributed.zero: 3 (`sharded`), every rank's state of its parts, re-cut when the run
/// resumes at another world size. A run without distributed.zero: 3 resumes from such a
/// checkpoint too: its optimizer.pt when `unitrain checkpoint merge` wrote one, else the parts
/// by parameter (named as `model`'s parameters).
/// With `cut` (distributed.tensor_parallel), optimizer.pt holds the state of the cut
/// parameters whole, as model.pt their values (bf16-true: of `masters`, the tensors its
/// optimizer steps).
CheckpointEntryPtr optimizer_entry(torch::optim::Optimizer& optimizer,
                                   const torch::nn::Module& model, ProcessGroup* group,
                                   OptimizerSharding* sharding, std::string root,
                                   const ShardedParameters* sharded = nullptr,
                                   const TensorCut* cut = nullptr,
                                   const MasterWeights* masters = nullptr);
/// distributed.zero: 3's model: model-shards.json and every rank's model-shard-rank-<R>.pt
/// (written as optimizer_entry's partitions; bf16-true's `masters`: the float32 masters of the
/// parts). Restores its own part at the same world size and layout; otherwise cuts its part
/// from the merged parts, or from a whole model.pt.
CheckpointEntryPtr sharded_model_entry(TrainModule& module, ShardedParameters& params,
                                       ProcessGroup& group, const TrainState& counters,
                                       MasterWeights* masters, std::string root);
/// distributed.zero: 3 with a callback that keeps per-parameter state (the ema callback's
/// average, Callback::parameter_state): `state` is kept by this rank's shards and the
/// parameters no unit holds (ParameterState::keep_parts, before fit starts); the entry is every
/// rank's <state_name>-shard-rank-<R>.pt, in the model's layout, restored as the model's parts
/// are, or cut from the callback's whole entry, or (none saved) from the resumed weights. Add it
/// after the model's.
CheckpointEntryPtr sharded_state_entry(ParameterState& state, TrainModule& module,
                                       ShardedParameters& params, ProcessGroup& group,
                                       std::string root);
/// After ShardedParameters::unshard (a collective): `state` whole again
/// (ParameterState::make_whole), gathered from the parts.
void make_state_whole(ParameterState& state, TrainModule& module, const ShardedParameters& params);
/// rng-rank-<R>.pt: every rank's generator states (gathered on rank 0).
CheckpointEntryPtr rng_entry(ProcessGroup* group);
/// grads.pt: the accumulated gradients of a window the checkpoint was saved inside.
CheckpointEntryPtr gradients_entry(TrainModule& module, const TrainState& counters);
/// loss_scaler.json: fp16-mixed's loss scale (nothing for other precisions).
CheckpointEntryPtr loss_scaler_entry(Precision& precision);
/// extra-<name>: what callbacks save (on_save_checkpoint / on_load_checkpoint).
CheckpointEntryPtr callbacks_entry(CallbackList& callbacks);
/// The callbacks' entries of checkpoint folder `dir` (extra-<name> files, by name).
std::map<std::string, std::string> read_callback_entries(const std::string& dir);
/// The schedule's own state (trainer_state.json's section "schedule"); the lr follows the
/// restored run.
CheckpointEntryPtr schedule_entry(LrController& lr, const TrainState& counters);

}  // namespace unitrain
