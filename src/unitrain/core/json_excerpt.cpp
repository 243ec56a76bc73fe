#include "unitrain/core/json_excerpt.h"

#include <nlohmann/json.hpp>

#include "unitrain/core/error_text.h"

namespace unitrain {

std::string text_excerpt(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return escape_non_utf8(text);
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return escape_non_utf8(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s.size() > max_chars) return "\"" + text_excerpt(s, max_chars) + "\"";
  }
  return text_excerpt(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      max_chars);
}

std::string json_error_text(const std::exception& e, size_t max_chars) {
  std::string_view text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const size_t end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return text_excerpt(text, max_chars);
}

}  // namespace unitrain
