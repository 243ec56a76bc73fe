#pragma once
// Values from files other tools wrote, quoted in a message: never longer than a line, and
// nlohmann's parse errors without their "[json.exception.parse_error.101]" ids.
#include <cstddef>
#include <exception>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace unitrain {

/// `text` cut to `max_chars` at a character's boundary, with "..." and the length when cut.
std::string text_excerpt(std::string_view text, size_t max_chars = 80);

/// `value` as compact JSON text, cut as text_excerpt cuts (a string longer than the cut is not
/// copied whole first).
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 80);

/// The message of a JSON exception (or any other) without nlohmann's "[json.exception.*.N] "
/// id, cut to `max_chars`: "syntax error while parsing value - unexpected end of input ...".
std::string json_error_text(const std::exception& e, size_t max_chars = 160);

}  // namespace unitrain
