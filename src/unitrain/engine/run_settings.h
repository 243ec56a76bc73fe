#pragma once
// RunSettings: every config section the Trainer acts on, parsed once when it is constructed.
#include <cstdint>
#include <string>

#include "unitrain/checkpoint/checkpoint_options.h"
#include "unitrain/core/config.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/train_options.h"
#include "unitrain/log/log_options.h"
#include "unitrain/parallel/distributed_options.h"
#include "unitrain/profile/profile_options.h"

namespace unitrain {

/// The Trainer's view of a resolved config: each section parsed (and checked) once.
struct RunSettings {
  TrainOptions train;
  LoaderOptions loader;
  CheckpointOptions checkpoint;
  EarlyStoppingOptions early_stopping;
  DistributedOptions distributed;
  LogOptions log;
  ProfileOptions profile;
  uint64_t seed = 0;
  std::string run_dir;
  bool schedule_per_epoch = false;  ///< scheduler.interval: epoch

  static RunSettings from_config(const Config& resolved);
};

}  // namespace unitrain
