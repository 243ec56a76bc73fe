#pragma once
// Numbers in trainer_state.json and its sections. Internal: included by .cpp files only (it
// brings nlohmann/json).
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace unitrain {

using StateJson = nlohmann::ordered_json;

/// JSON has no NaN or infinity: trainer_state.json writes them as "nan", "inf", "-inf"; finite
/// doubles as numbers that read back exactly.
inline StateJson state_number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

/// state_number() read back; anything else is NaN.
inline double state_double(const StateJson& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.is_string() ? j.get<std::string>() : "nan";
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

/// A section of a trainer_state.json as its entry reads it: the object `text` holds (an empty
/// object for "", an entry that saved nothing).
inline StateJson state_section(const std::string& text) {
  return text.empty() ? StateJson::object() : StateJson::parse(text);
}

}  // namespace unitrain
