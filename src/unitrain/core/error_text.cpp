#include "unitrain/core/error_text.h"

#include <c10/util/Exception.h>

namespace unitrain {

std::string error_text(const std::exception& e, size_t max_chars) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  // A backtrace may also arrive inside the text of an error that wrapped a c10::Error.
  if (size_t at = text.find("\nException raised from "); at != std::string::npos) text.erase(at);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

std::string some_names(const std::vector<std::string>& names, size_t max) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += " and " + std::to_string(names.size() - max) + " more";
  return out;
}

}  // namespace unitrain
