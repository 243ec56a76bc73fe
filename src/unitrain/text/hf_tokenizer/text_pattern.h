#pragma once
// A tokenizer.json pattern: {"String": "text"} (found as it is) or {"Regex": "..."}.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "unitrain/text/hf_tokenizer/pattern.h"

namespace unitrain::hf {

class JsonAt;

/// A literal or a regular expression, as Replace, Split and the Replace decoder give them.
class TextPattern {
 public:
  /// ConfigError naming the JSON path when it is neither, or the regex does not compile.
  explicit TextPattern(const JsonAt& json);

  /// Each non-overlapping match of `text`, left to right.
  void for_each_match(std::string_view text,
                      const std::function<void(size_t, size_t)>& on_match) const;
  /// `text` with every match replaced by `content`.
  std::string replace_all(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;             ///< a String pattern
  std::unique_ptr<Pattern> regex_;  ///< a Regex pattern
};

}  // namespace unitrain::hf
