#pragma once
// TextLines: the texts of line-based files (plain lines or JSON Lines) held compactly.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "unitrain/core/options.h"

namespace unitrain {

/// How a file holds its texts: `lines` (one text a line), `jsonl` (one JSON object a line, the
/// text in a string field), or `auto` (jsonl for names ending .jsonl or .json, a .gz after it
/// ignored; lines otherwise).
enum class TextFormat { Auto, Lines, Jsonl };
inline const EnumNames<TextFormat> kTextFormatNames = {
    {"auto", TextFormat::Auto}, {"lines", TextFormat::Lines}, {"jsonl", TextFormat::Jsonl}};

/// The texts of one or more files, in file order, in one buffer with their offsets: memory is
/// the texts' bytes plus 12 bytes a text (an offset and a line number), not one std::string a
/// line. Blank lines and texts of only whitespace are skipped; a line's trailing '\r' (CRLF
/// files) and a file's leading UTF-8 byte-order mark are dropped. Files may be gzip-compressed.
/// ConfigError naming the file, the line number and the key for a line that is not a JSON
/// object, lacks `field`, or whose `field` is not a string; and naming a missing file.
class TextLines {
 public:
  /// `who` starts every message ("text", "tokenizer train").
  TextLines(const std::vector<std::string>& paths, TextFormat format, const std::string& field,
            const std::string& who);

  int64_t size() const { return static_cast<int64_t>(line_numbers_.size()); }
  std::string_view text(int64_t i) const {
    return std::string_view(buffer_).substr(static_cast<size_t>(starts_[i]),
                                            static_cast<size_t>(starts_[i + 1] - starts_[i]));
  }
  /// Where text `i` comes from: "'train.jsonl' line 12".
  std::string where(int64_t i) const;
  /// The bytes of all texts.
  int64_t bytes() const { return static_cast<int64_t>(buffer_.size()); }
  /// The length of the longest text, in bytes.
  int64_t longest() const { return longest_; }

 private:
  void read(const std::string& path, TextFormat format, const std::string& field,
            const std::string& who);

  std::string buffer_;
  std::vector<int64_t> starts_{0};      ///< text i is buffer_[starts_[i], starts_[i + 1])
  std::vector<uint32_t> line_numbers_;  ///< 1-based, within its file
  std::vector<int64_t> first_of_file_;  ///< index of each file's first text
  std::vector<std::string> paths_;
  int64_t longest_ = 0;
};

}  // namespace unitrain
