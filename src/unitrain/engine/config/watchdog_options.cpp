#include "unitrain/engine/config/watchdog_options.h"

namespace unitrain {

void WatchdogOptions::declare(Options<WatchdogOptions>& o) {
  using T = WatchdogOptions;
  o.field("stall_timeout", &T::stall_timeout)
      .min(0)
      .harmless()
      .help(
          "seconds a process may make no progress outside collectives (no new micro-batch, "
          "phase or step: a data loader stuck on a network filesystem, a deadlock in user code) "
          "before the watchdog acts, naming the step and phase; 0 = off. Collectives have "
          "distributed.timeout");
  o.field("action", &T::action, {{"abort", StallAction::Abort}, {"warn", StallAction::Warn}})
      .harmless()
      .help(
          "abort = log the error, write run_dir/logs/flight-rank-N.json (data parallel) and end "
          "the process with exit code 1, so that `unitrain launch --max-restarts` or torchrun "
          "restarts from the last checkpoint; warn = a warning each stall_timeout the stall "
          "lasts");
}

}  // namespace unitrain
