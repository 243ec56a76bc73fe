#pragma once
// TrialConfigs: the run config of each trial — the sweep's base config, the trial's parameters
// and what the sweep sets itself (name, run_dir, threads, validation period, rung length).
#include <cstdint>
#include <string>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/train_unit.h"
#include "unitrain/sweep/search_space.h"
#include "unitrain/sweep/sweep_options.h"

namespace unitrain {

class TrialConfigs {
 public:
  /// Reads the base config (a file or inline) and resolves it once: ConfigError naming the key
  /// or file when the base itself is bad. `cpus`: the CPUs the trials share.
  TrialConfigs(const SweepOptions& options, const SearchSpace& space, double cpus);

  /// The rungs' lengths: asha's rungs, else the base config's train.max_length alone.
  const std::vector<TrainUnit>& rungs() const { return rungs_; }
  /// Trial k's folder: <sweep folder>/trial-<k>, k zero-padded to max_trials' width, or to the
  /// width the sweep folder's trial folders already have (a continued sweep whose max_trials
  /// grew keeps its names).
  std::string run_dir(int64_t k) const;
  /// Trial k's resolved run config trained to rung `rung`'s length. ConfigError naming the
  /// space's key and the run config key at fault (unknown key, wrong type, bad value).
  Config resolve(int64_t k, const TrialParameters& parameters, int rung) const;
  /// What the sweep sets beside the parameters, for docs and logs, e.g. "train.threads 1".
  const std::vector<std::pair<std::string, std::string>>& sweep_settings() const {
    return settings_;
  }

 private:
  const SweepOptions& o_;
  Config raw_base_;
  std::vector<TrainUnit> rungs_;
  std::vector<std::pair<std::string, std::string>> settings_;  // key -> YAML text
  int width_ = 1;
};

}  // namespace unitrain
