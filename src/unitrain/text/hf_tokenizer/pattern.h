#pragma once
// A compiled regular expression (PCRE2, JIT-compiled, Unicode properties on) found in valid
// UTF-8 text: the patterns of tokenizer.json (GPT-2's, Llama-3's) need \p{L}, \p{N} and
// look-ahead, which std::regex lacks.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace unitrain::hf {

/// A pattern compiled once and matched from any number of threads at once (each match has its
/// own match data). ConfigError naming `where` (the file and the JSON path) when PCRE2 refuses
/// the pattern, quoting at most its first 200 bytes.
class Pattern {
 public:
  /// `literal`: the pattern is plain text (a tokenizer.json {"String": ...} pattern).
  Pattern(const std::string& pattern, bool literal, const std::string& where);
  ~Pattern();
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;

  /// Calls `on_match(begin, end)` for each non-overlapping match of valid UTF-8 `text`, left to
  /// right (an empty match moves one character on). TrainError if PCRE2 fails mid-way.
  void for_each_match(std::string_view text,
                      const std::function<void(size_t, size_t)>& on_match) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace unitrain::hf
