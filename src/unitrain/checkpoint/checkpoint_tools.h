#pragma once
// `unitrain checkpoint inspect | verify | merge`: looking at, checking and reshaping checkpoints
// without a config, a model or an optimizer.
#include <string>

namespace unitrain {

/// The checkpoint folder `path` names: a step folder (it has a MANIFEST.json), or a run's
/// `checkpoints/` folder or its run_dir, meaning their `last` checkpoint. ConfigError naming
/// `path` otherwise.
std::string checkpoint_folder(const std::string& path);

/// What a checkpoint holds: step, epoch, samples, position in the epoch, world size, per-process
/// batch, accumulation, ZeRO stage, config hash, the metrics last logged before it was saved, and
/// every file with its size; as text, or (`json`) one JSON object. trainer_state.json is read
/// through its CRC (TrainError naming it when corrupt).
std::string inspect_checkpoint(const std::string& path, bool json);

/// Checks every file of a checkpoint against its manifest (size and CRC-32). `path`: a step
/// folder, or a run's `checkpoints/` folder or run_dir (then every step-<S> folder in it). Writes
/// one line per folder ("ok" or what is wrong, naming the file) to `report`; returns how many
/// are invalid.
int verify_checkpoints(const std::string& path, std::string& report);

/// `format` checkpoint: a checkpoint whose optimizer state is split over ranks (ZeRO:
/// optimizer-rank-<R>.pt) as a new complete checkpoint folder `out` with one optimizer.pt
/// (torch.load reads it; a run of any number of processes resumes from it with
/// --checkpoint.resume <out>); the other files copied as they are. A distributed.zero: 3
/// checkpoint (model-shards.json): its model's parts merged into one model.pt, and the ema
/// callback's parts (ema-shard-rank-<R>.pt) into extra-ema.pt; the other files kept. Nothing
/// existing is overwritten: TrainError when `out` exists, when the checkpoint is not sharded, or
/// when a file is corrupt or the partitions disagree. `format` safetensors: the checkpoint's model
/// (model.pt, any checkpoint) as one safetensors file `out`, named as the model's state_dict(),
/// metadata {"format": "pt", "unitrain.step":
/// "<S>"}; no config or model needed. ConfigError when `out` exists, TrainError when model.pt
/// is corrupt. Returns what was written.
std::string merge_checkpoint(const std::string& path, const std::string& out,
                             const std::string& format = "checkpoint");

}  // namespace unitrain
