#pragma once
// A metric value in the JSON files a person reads (metrics.jsonl, results/*.json). Internal:
// included by .cpp files only (it brings nlohmann/json).
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace unitrain {

/// JSON has no NaN or infinity: they are written as the strings "NaN", "Infinity", "-Infinity"
/// (what Python's json module reads as floats); finite values as numbers that read back exactly.
inline nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
}

/// What json_number wrote, read back: a number, or one of its three strings; none for anything
/// else. (Any nlohmann JSON type: ordered_json too.)
template <typename Json>
std::optional<double> json_number_value(const Json& j) {
  if (j.is_number()) return j.template get<double>();
  if (j == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (j == "Infinity") return std::numeric_limits<double>::infinity();
  if (j == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

}  // namespace unitrain
