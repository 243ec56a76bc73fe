#pragma once
// WatchdogOptions: the `train.watchdog` section (the stall watchdog, stall_watchdog.h).
#include "unitrain/core/options.h"

namespace unitrain {

enum class StallAction { Abort, Warn };

/// How long a training process may make no progress outside collectives (no new micro-batch,
/// phase or step) before the watchdog acts, and what it does then.
struct WatchdogOptions {
  double stall_timeout = 1800;  ///< seconds; 0 = off
  StallAction action = StallAction::Abort;

  static void declare(Options<WatchdogOptions>& o);
};

}  // namespace unitrain
