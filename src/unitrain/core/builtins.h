#pragma once
// Registration of the built-in components, one function per area. Each is idempotent.
// register_builtins() (core/registry.h) calls them all.

namespace unitrain {
void register_builtin_datasets();      // data/
void register_builtin_models();        // models/
void register_builtin_losses();        // objective/
void register_builtin_regularizers();  // objective/
void register_builtin_metrics();       // metrics/
void register_builtin_optimizers();    // optim/
void register_builtin_schedulers();    // optim/
}  // namespace unitrain
