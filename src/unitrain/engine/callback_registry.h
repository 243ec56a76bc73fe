#pragma once
// The callback registry: callbacks built by name from the config's `callbacks` list.
#include <memory>
#include <string>

#include "unitrain/core/config.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/callback.h"

namespace unitrain {

using CallbackPtr = std::shared_ptr<Callback>;

/// Registered callbacks (`callbacks: [{type: ..., args: {...}}]`). A plugin adds one with
///   callback_registry().add("mine", "one line for unitrain list", schema_of_its_args,
///       [](const Config& args) { return std::make_shared<Mine>(args); });
Registry<CallbackPtr>& callback_registry();

/// Registers callback C under `name`, built from its options struct O (whose keys O declares
/// once, `static void O::declare(Options<O>&)`): what each built-in callback's own file calls,
/// and a plugin's may.
template <typename C, typename O>
void register_callback(const std::string& name, const std::string& help) {
  callback_registry().add(name, help, *options_of<O>().schema(), [](const Config& args) {
    return std::make_shared<C>(options_of<O>().parse(args));
  });
}

/// Registers the built-in callbacks: early_stopping, lr_monitor, grad_norm, throughput, timer,
/// ema, model_summary (idempotent; engine's register_builtins() calls it). Defined beside them,
/// in callbacks/builtin_callbacks.cpp.
void register_builtin_callbacks();

}  // namespace unitrain
