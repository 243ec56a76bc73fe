#include "unitrain/engine/setup/run_callbacks.h"

#include "unitrain/engine/config/run_settings.h"

namespace unitrain {

std::vector<CallbackPtr> build_callbacks(const Config& resolved) {
  register_builtin_callbacks();
  std::vector<CallbackPtr> out;
  const RunSettings run = RunSettings::from_config(resolved);
  if (!run.early_stopping.metric.empty()) {
    // The `early_stopping` section holds the args of the registered early_stopping callback.
    out.push_back(callback_registry().create_named("early_stopping", resolved.at("early_stopping"),
                                                   "early_stopping"));
  }
  for (const Config& c : run.callbacks) out.push_back(callback_registry().create(c));
  return out;
}

}  // namespace unitrain
