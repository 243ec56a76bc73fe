#pragma once
// register_builtins(): every area's built-in components, registered once.

namespace unitrain {

/// Registers every built-in component once (idempotent): datasets, models, losses,
/// regularizers, metrics, optimizers, schedulers, callbacks and trackers. Called by the Trainer
/// and the CLI; an explicit call (not static initializers) so registration survives static
/// linking. Each area declares its own `register_builtin_<kind>()` next to its registry.
void register_builtins();

}  // namespace unitrain
