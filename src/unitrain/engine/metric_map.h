#pragma once
// MetricMap: the metric values of one log event or validation pass.
#include <map>
#include <string>

namespace unitrain {

/// Metric values of one log event, e.g. {"train/loss": 0.3, "train/lr": 1e-3}.
using MetricMap = std::map<std::string, double>;

/// The value of `key` in `metrics` (a validation pass's); ConfigError naming `who` (the key
/// that monitors it) and the metrics there are otherwise.
double monitored(const MetricMap& metrics, const std::string& key, const std::string& who);

}  // namespace unitrain
