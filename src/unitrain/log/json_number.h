#pragma once
// A metric value in the JSON files a person reads (metrics.jsonl, results/*.json). Internal:
// included by .cpp files only (it brings nlohmann/json).
#include <nlohmann/json.hpp>

#include <cmath>

namespace unitrain {

/// JSON has no NaN or infinity: they are written as the strings "NaN", "Infinity", "-Infinity"
/// (what Python's json module reads as floats); finite values as numbers that read back exactly.
inline nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
}

}  // namespace unitrain
