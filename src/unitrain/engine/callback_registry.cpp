#include "unitrain/engine/callback_registry.h"

#include "unitrain/checkpoint/checkpoint_options.h"

namespace unitrain {

Registry<CallbackPtr>& callback_registry() {
  static Registry<CallbackPtr> registry("callback");
  return registry;
}

std::vector<CallbackPtr> build_callbacks(const Config& resolved) {
  register_builtin_callbacks();
  std::vector<CallbackPtr> out;
  // The `early_stopping` section holds the args of the registered early_stopping callback.
  const Config early = resolved.at("early_stopping");
  if (!EarlyStoppingOptions::from_config(early).metric.empty()) {
    out.push_back(callback_registry().create_named("early_stopping", early, "early_stopping"));
  }
  if (resolved.has("callbacks")) {
    for (const Config& c : resolved.list("callbacks")) out.push_back(callback_registry().create(c));
  }
  return out;
}

}  // namespace unitrain
