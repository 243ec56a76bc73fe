#pragma once
// What the config-driven commands (train, eval, export) read of a resolved run config, and the
// model and objective they build from it: train_from_config.cpp and eval_export.cpp.
#include <functional>
#include <memory>

#include "unitrain/core/config.h"
#include "unitrain/data/build_data.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/models/model.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {

/// What the config-driven path reads of a resolved run config, read once: the root keys, the
/// Trainer's sections and the sections the model, objective and data are built from (`run`),
/// and the keys of those three.
struct ConfigDriven {
  RunSettings run;
  ModelSection model_keys;
  ObjectiveOptions objective_keys;
  DataOptions data_keys;
};

/// `config`'s sections and keys; ConfigError when it has no model or no training data.
ConfigDriven config_driven(const Config& config);

/// The model and objective of `config`, initialised from model.init_from when given and
/// `init` (a checkpoint's weights replace them otherwise). `before_weights`, when given, sees
/// the model once it is built and before any weight is read (checks that would otherwise wait
/// for the weights: the data's token ids against its vocabulary).
std::shared_ptr<ObjectiveModule> build_module(
    const ConfigDriven& c, bool init,
    const std::function<void(const Model&)>& before_weights = nullptr);

}  // namespace unitrain
