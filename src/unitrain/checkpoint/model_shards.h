#pragma once
// A checkpoint's model, whole (model.pt) or as distributed.zero: 3's parts (model-shards.json
// and model-shard-rank-<R>.pt, each holding "<i>": its part of flat i).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/named_tensors.h"
#include "unitrain/core/shard_layout.h"

namespace unitrain {

/// In rank 0's model-shard file: the entries of the buffers and of the parameters no unit holds
/// (`whole.<name>`), whole.
inline constexpr const char* kWholeEntryPrefix = "whole.";

/// Checkpoint `dir` holds its model as distributed.zero: 3's parts.
bool has_model_shards(const std::string& dir);

/// Names the file of a rank's parts: checkpoint_files::model_shard, or a callback's state in
/// the same layout (checkpoint_files::state_shard, e.g. the ema callback's average).
using ShardFileName = std::function<std::string(int rank)>;

/// The callbacks' per-parameter states that checkpoint `dir` holds by parts (each named by its
/// rank 0 file, <name>-shard-rank-0.pt, but the model's own): e.g. {"ema"}.
std::vector<std::string> sharded_state_names(const std::string& dir);

/// The parts merged into whole tensors, in the layout's order (each rank's file read once),
/// then rank 0's whole.<name> entries; a frozen flat whose parts were not saved (LoRA's base)
/// gives none. TrainError naming the file when one is missing, damaged
/// or does not fit the layout.
NamedTensors merge_model_shards(const std::string& dir,
                                ShardFileName file_of = checkpoint_files::model_shard);

/// Elements [start, start + out.numel()) of a flat whose parts are `parts` (each rank's, in rank
/// order, `part` elements each; the last ones padding) copied into `out`, reading only those
/// elements of each part; elements past the parts stay as they are.
void copy_flat_range(const std::vector<at::Tensor>& parts, int64_t part, int64_t start,
                     at::Tensor out);

/// One rank's parts of a new layout cut from a checkpoint's parts of the same flats at another
/// world size, and rank 0's whole.<name> entries (by name, without the prefix).
struct RecutParts {
  /// per flat: `layout.flats[i].part` elements, saved dtype; undefined for a frozen flat whose
  /// parts were not saved
  std::vector<at::Tensor> parts;
  std::vector<std::pair<std::string, at::Tensor>> whole;
};

/// recut_model_shards: `rank`'s parts of `layout` (the same flats as `saved`, the layout the
/// checkpoint `dir` was written with) from the files `file_of` names, each mapped and verified,
/// reading only the elements of each saved part that fall in this rank's new parts: a resume
/// at another world size holds its own parts, not the whole model. TrainError naming the file
/// when one is missing, damaged or does not fit the layout.
RecutParts recut_model_shards(const std::string& dir, ShardFileName file_of,
                              const ShardLayout& saved, const ShardLayout& layout, int rank);

/// The whole model of checkpoint `dir`: model.pt, or merge_model_shards.
NamedTensors read_model_state(const std::string& dir);

}  // namespace unitrain
