#pragma once
// Reading the JSON files of a run folder. Internal: included by report/*.cpp only (it brings
// nlohmann/json).
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

namespace unitrain::report {

/// A number of a run's JSON files. Metrics files write NaN and infinities as "NaN",
/// "Infinity", "-Infinity", trainer_state.json as "nan", "inf", "-inf": both read back.
/// nullopt for anything else.
inline std::optional<double> json_double(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (!j.is_string()) return std::nullopt;
  const std::string& s = j.get_ref<const std::string&>();
  if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

/// The whole text of a file, or nullopt when it cannot be opened.
inline std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The JSON object in `path`: nullopt when the file does not exist; a discarded value when it
/// is not a JSON object.
inline std::optional<nlohmann::json> read_json_object(const std::string& path) {
  const auto text = read_text_file(path);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return nlohmann::json(nlohmann::json::value_t::discarded);
  return j;
}

}  // namespace unitrain::report
