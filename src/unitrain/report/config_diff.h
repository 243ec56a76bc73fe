#pragma once
// A run's resolved config as rows of `key.path = value`, and what differs between runs.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/config.h"

namespace unitrain::report {

/// `key.path` -> value text, in file order.
using FlatConfig = std::vector<std::pair<std::string, std::string>>;

/// Flattens a config: maps by key (`optimizer.args.lr`), lists of sections by index
/// (`objective.losses.0.type`); a list of plain values stays one value (`[64, 256, 10]`), an empty
/// map reads `{}`, a null `null`.
FlatConfig flatten_config(const Config& config);

/// One key across several runs: its value in each (nullopt where a run has no such key).
struct ConfigRow {
  std::string key;
  std::vector<std::optional<std::string>> values;
  bool differs = false;  ///< not the same value in every run (missing counts as different)
};

/// Every key of any of `configs`, in order of first appearance, with its value in each.
std::vector<ConfigRow> compare_configs(const std::vector<FlatConfig>& configs);

}  // namespace unitrain::report
