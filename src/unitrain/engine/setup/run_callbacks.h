#pragma once
// The callbacks a run's config asks for, built before fit.
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/engine/callback_registry.h"

namespace unitrain {

/// The callbacks a resolved run config asks for, built through callback_registry(), in order:
/// early_stopping (its args: the `early_stopping` section) when that section names a metric,
/// then each of `callbacks`.
std::vector<CallbackPtr> build_callbacks(const Config& resolved);

}  // namespace unitrain
