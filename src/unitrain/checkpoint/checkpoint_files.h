#pragma once
// The names of the files in a checkpoint folder (checkpoints/step-<S>/), spelled once.
#include <string>

namespace unitrain::checkpoint_files {

inline constexpr const char* kModel = "model.pt";          ///< the model's state_dict
inline constexpr const char* kOptimizer = "optimizer.pt";  ///< the optimizer's state
inline constexpr const char* kGradients = "grads.pt";      ///< saved inside a window only
/// The fingerprint of the frozen weights a checkpoint of the trainable ones alone trained on.
inline constexpr const char* kFrozenWeights = "frozen_weights.json";
inline constexpr const char* kLossScaler = "loss_scaler.json";      ///< fp16-mixed's loss scale
inline constexpr const char* kDivergence = "divergence.json";       ///< train.divergence's state
inline constexpr const char* kTrainerState = "trainer_state.json";  ///< TrainerStateFile
inline constexpr const char* kConfig = "config.yaml";               ///< the config it trained with
inline constexpr const char* kClasses = "classes.json";             ///< the data's class names
inline constexpr const char* kCallbackPrefix = "extra-";            ///< extra-<name>: a callback's
inline constexpr const char* kPartitionPrefix = "optimizer-rank-";
/// distributed.zero: 3's model: the layout of its flats, and each rank's part of them.
inline constexpr const char* kModelShards = "model-shards.json";
inline std::string model_shard(int rank) {
  return "model-shard-rank-" + std::to_string(rank) + ".pt";
}
/// A callback's per-parameter state `name` (engine/parameter_state.h): whole, its entry
/// (extra-<name>.pt, a dict of tensors by parameter name); with distributed.zero: 3 each rank's
/// part of it, in the flats of model-shards.json.
inline constexpr const char* kStateShardSuffix = "-shard-rank-";
inline std::string state_entry(const std::string& name) { return name + ".pt"; }
inline std::string state_shard(const std::string& name, int rank) {
  return name + kStateShardSuffix + std::to_string(rank) + ".pt";
}
/// The ema callback's average: state "ema".
inline constexpr const char* kEmaState = "ema";
inline constexpr const char* kEmaEntry = "ema.pt";

/// A ZeRO run's optimizer partition of `rank`.
inline std::string optimizer_partition(int rank) {
  return kPartitionPrefix + std::to_string(rank) + ".pt";
}
/// The state of the optimizer a module steps itself as `name` (manual optimization), and its
/// lr schedule's.
inline std::string module_optimizer(const std::string& name) {
  return "module-optimizer-" + name + ".pt";
}
inline std::string module_schedule(const std::string& name) {
  return "module-schedule-" + name + ".json";
}
/// The generator states of `rank`.
inline std::string rng(int rank) { return "rng-rank-" + std::to_string(rank) + ".pt"; }

/// Whether `name` is (or may be) a file the built-in entries write: one of the names above, or
/// of their families (extra-*, *-rank-*, module-optimizer-*, module-schedule-*).
inline bool is_builtin(const std::string& name) {
  for (const char* fixed :
       {kModel, kOptimizer, kGradients, kFrozenWeights, kLossScaler, kDivergence, kTrainerState,
        kConfig, kClasses, kModelShards, kEmaEntry, "MANIFEST.json"}) {
    if (name == fixed) return true;
  }
  for (const char* prefix : {kCallbackPrefix, "module-optimizer-", "module-schedule-"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return name.find("-rank-") != std::string::npos;
}

}  // namespace unitrain::checkpoint_files
