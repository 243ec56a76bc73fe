#pragma once
// ProfileOptions: the `profile` section — which optimizer steps the profiler records.
#include <cstdint>

#include "unitrain/core/options.h"

namespace unitrain {

/// PyTorch's profiler schedule: of each cycle of wait + warmup + active optimizer steps, skip
/// `wait`, run the profiler without keeping what it sees for `warmup` (first-call costs), and
/// record `active`; `repeat` cycles (0 = until the run ends). Steps count from the start of
/// this process's fit() (a resumed run starts a new count).
struct ProfileOptions {
  bool enabled = false;
  int64_t wait = 5;
  int64_t warmup = 1;
  int64_t active = 10;
  int64_t repeat = 1;
  bool trace = true;  ///< also write the Chrome trace (LibTorch's operators under the phases)

  static void declare(Options<ProfileOptions>& o);
  static std::shared_ptr<const Schema> schema() { return options_of<ProfileOptions>().schema(); }
  static ProfileOptions from_config(const Config& c) {
    return options_of<ProfileOptions>().parse(c);
  }
};

}  // namespace unitrain
