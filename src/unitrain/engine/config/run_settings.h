#pragma once
// RunSettings: the root of the run's config. Every root key is declared once in
// RunSettings::declare(); the sections the Trainer acts on are bound to fields, parsed once when
// it is constructed. The config-driven sections (model, objective, data's datasets) are declared
// here and read by their builders (train_from_config.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/core/config.h"
#include "unitrain/core/options.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/config/train_options.h"
#include "unitrain/log/log_options.h"
#include "unitrain/parallel/distributed_options.h"
#include "unitrain/profile/profile_options.h"

namespace unitrain {

struct DataOptions;

/// The Trainer's view of a resolved config: each section parsed (and checked) once.
struct RunSettings {
  std::string name = "run";
  uint64_t seed = 42;
  std::string run_dir = "runs/${name}";
  TrainOptions train;
  LoaderOptions loader;  ///< data.loader
  CheckpointOptions checkpoint;
  EarlyStoppingOptions early_stopping;
  DistributedOptions distributed;
  LogOptions log;
  ProfileOptions profile;
  bool schedule_per_epoch = false;  ///< scheduler.interval: epoch
  /// The resolved `optimizer` and `scheduler` sections ({type, args, ...}), which fit() builds
  /// the optimizer and the schedule from (their registries read them).
  Config optimizer, scheduler;
  /// The resolved config-driven sections (null `model` when none is given), which
  /// train_from_config builds the model, objective and datasets from.
  Config model, objective, data;
  /// The resolved `callbacks` sections ({type, args}), in order (build_callbacks builds them).
  std::vector<Config> callbacks;

  /// The root keys (name, seed, run_dir) and sections, in the order docs/config.md lists them.
  static void declare(Options<RunSettings>& o);
  /// From a config resolved by resolve_run_config. Marks `optimizer` and `scheduler` read: fit()
  /// builds them from their sections (Trainer::configure_optimizer, configure_scheduler).
  static RunSettings from_config(const Config& resolved) {
    return options_of<RunSettings>().read_resolved(resolved);
  }
};

/// The data section's keys of a config-driven run (`run` from its resolved config): ConfigError
/// when it has no model section or no training data.
DataOptions config_driven_data(const RunSettings& run);

/// Checks that `name` (the value of config key `key`) is one folder name, as it names a folder
/// under `parent` ("runs", "sweeps"): not empty, '.' or '..', no '/' — else a ConfigError that
/// names `folder_key`, the key for a folder elsewhere.
void check_folder_name(const std::string& key, const std::string& name, const std::string& parent,
                       const std::string& folder_key);

}  // namespace unitrain
