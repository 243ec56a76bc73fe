#include "unitrain/profile/profile_options.h"

namespace unitrain {

void ProfileOptions::declare(Options<ProfileOptions>& o) {
  using T = ProfileOptions;
  o.field("enabled", &T::enabled)
      .help(
          "profile the training step: a per-phase table and run_dir/profile/ (unitrain train "
          "--profile)");
  o.field("wait", &T::wait).min(0).help("steps skipped at the start of each cycle");
  o.field("warmup", &T::warmup).min(0).help("steps profiled but not kept, after the wait");
  o.field("active", &T::active).min(1).help("steps recorded in each cycle");
  o.field("repeat", &T::repeat).min(0).help("cycles of wait + warmup + active; 0 = until the end");
  o.field("trace", &T::trace)
      .help(
          "write a Chrome trace of the active steps (phases with LibTorch's operators under "
          "them) to run_dir/profile/trace-rank-<N>.json");
}

}  // namespace unitrain
