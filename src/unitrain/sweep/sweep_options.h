#pragma once
// SweepOptions: a sweep file (`unitrain sweep SWEEP.yaml`) — the base run config, the search
// space, the metric and the strategy. Each key is declared once in declare() (docs/sweeps.md).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/options.h"
#include "unitrain/core/train_unit.h"

namespace unitrain {

enum class SweepStrategy { Grid, Random, Asha };

/// What a sweep runs. `base` is a run config: a YAML file's path (a string) or the config
/// itself (a map); `space` maps config key paths to distributions (search_space.h).
struct SweepOptions {
  std::string name;
  Config base;
  Config space;
  std::string metric;             ///< a validation metric, e.g. `val/acc`
  bool higher_is_better = false;  ///< `mode: max`
  SweepStrategy strategy = SweepStrategy::Random;
  int64_t max_trials = 0;  ///< 0: the grid's size (strategy grid)
  int64_t seed = 0;
  int64_t parallel = 1;         ///< trials at once
  int64_t retries = 1;          ///< restarts of a trial ended by a signal the sweep did not send
  std::string sweep_dir;        ///< "": sweeps/<name>
  int64_t nproc_per_node = 0;   ///< launch.nproc_per_node; 0: a trial is one `unitrain train`
  int64_t master_port = 29500;  ///< launch.master_port: trial k's rendezvous uses this + k
  TrainUnit min_length = TrainUnit::epochs(1);  ///< asha.min_length
  TrainUnit max_length = TrainUnit::epochs(9);  ///< asha.max_length
  int64_t reduction_factor = 3;                 ///< asha.reduction_factor

  /// The folder the sweep writes: sweep_dir, else sweeps/<name>.
  std::string folder() const { return sweep_dir.empty() ? "sweeps/" + name : sweep_dir; }

  static void declare(Options<SweepOptions>& o);
  /// The `launch` and `asha` sections (declare()'s).
  static void declare_trial_sections(Options<SweepOptions>& o);
};

/// Reads a sweep file, then sets `overrides` (key path -> YAML text: `parallel` -> `2`);
/// ConfigError naming the key (or the file) at fault.
SweepOptions load_sweep_options(
    const std::string& file,
    const std::vector<std::pair<std::string, std::string>>& overrides = {});

}  // namespace unitrain
