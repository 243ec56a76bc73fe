#pragma once
// A checkpoint's model, whole (model.pt) or as distributed.zero: 3's parts (model-shards.json
// and model-shard-rank-<R>.pt, each holding "<i>": its part of flat i).
#include <string>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/named_tensors.h"

namespace unitrain {

/// In rank 0's model-shard file: the entries of the buffers and of the parameters no unit holds
/// (`whole.<name>`), whole.
inline constexpr const char* kWholeEntryPrefix = "whole.";

/// Checkpoint `dir` holds its model as distributed.zero: 3's parts.
bool has_model_shards(const std::string& dir);

/// Names the file of a rank's parts: checkpoint_files::model_shard, or ema_shard (the ema
/// callback's average, in the same layout).
using ShardFileName = std::string (*)(int rank);

/// The parts merged into whole tensors, in the layout's order (each rank's file read once),
/// then rank 0's whole.<name> entries. TrainError naming the file when one is missing, damaged
/// or does not fit the layout.
NamedTensors merge_model_shards(const std::string& dir,
                                ShardFileName file_of = checkpoint_files::model_shard);

/// The whole model of checkpoint `dir`: model.pt, or merge_model_shards.
NamedTensors read_model_state(const std::string& dir);

}  // namespace unitrain
