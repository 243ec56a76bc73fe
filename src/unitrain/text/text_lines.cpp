#include "unitrain/text/text_lines.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"

namespace unitrain {
namespace {

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

/// jsonl for .jsonl and .json (also with .gz after them), else lines.
TextFormat format_of(const std::string& path) {
  std::filesystem::path p(path);
  if (p.extension() == ".gz") p = p.stem();
  const std::string ext = p.extension().string();
  return ext == ".jsonl" || ext == ".json" ? TextFormat::Jsonl : TextFormat::Lines;
}

std::string json_type(const nlohmann::json& j) {
  return j.is_number() ? "a number" : j.is_null() ? "null" : std::string("an ") + j.type_name();
}

/// The string `field` of the JSON object on line `number` of `path`.
std::string json_field(std::string_view line, const std::string& field, const std::string& who,
                       const std::string& path, uint64_t number) {
  auto where = [&] { return detail::concat(who, ": '", path, "' line ", number); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line.begin(), line.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(detail::concat(where(), ": not valid JSON (", e.what(), ")"));
  }
  UT_CHECK(j.is_object(), where(), ": ", json_type(j),
           ", not a JSON object (format jsonl reads one object a line; format: lines reads "
           "plain text)");
  auto it = j.find(field);
  if (it == j.end()) {
    std::string keys;
    for (const auto& [k, v] : j.items()) keys += (keys.empty() ? "" : ", ") + k;
    throw ConfigError(detail::concat(where(), ": no key '", field,
                                     "' (its keys: ", keys.empty() ? "none" : keys,
                                     "); set field to the key that holds the text"));
  }
  UT_CHECK(it->is_string(), where(), ": '", field, "' is ", json_type(*it), ", not a string");
  return std::move(it->get_ref<std::string&>());
}

}  // namespace

TextLines::TextLines(const std::vector<std::string>& paths, TextFormat format,
                     const std::string& field, const std::string& who) {
  UT_CHECK(!paths.empty(), who, ": no files given");
  for (const auto& path : paths) read(path, format, field, who);
  buffer_.shrink_to_fit();
  starts_.shrink_to_fit();
  line_numbers_.shrink_to_fit();
}

// The file is read whole, then its texts are moved down over what is skipped (line ends, blank
// lines, a JSON line's key and quotes), so that it is its own buffer: a decoded JSON string is
// never longer than its line, and a plain line starts at or after where it is written.
void TextLines::read(const std::string& path, TextFormat format, const std::string& field,
                     const std::string& who) {
  std::string data = read_file_bytes(path, who);
  const bool jsonl = (format == TextFormat::Auto ? format_of(path) : format) == TextFormat::Jsonl;
  const auto base = static_cast<int64_t>(buffer_.size());
  first_of_file_.push_back(size());
  paths_.push_back(path);
  size_t pos = data.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  size_t written = 0;
  uint64_t line = 0;
  std::string decoded;
  while (pos < data.size()) {
    ++line;
    UT_CHECK(line < std::numeric_limits<uint32_t>::max(), who, ": '", path,
             "' has more than 2^32 lines; split it into several files");
    const size_t end = std::min(data.find('\n', pos), data.size());
    std::string_view text(data.data() + pos, end - pos);
    pos = end + 1;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (is_blank(text)) continue;
    if (jsonl) {
      decoded = json_field(text, field, who, path, line);
      text = decoded;
      if (is_blank(text)) continue;
    }
    std::memmove(data.data() + written, text.data(), text.size());
    written += text.size();
    starts_.push_back(base + static_cast<int64_t>(written));
    line_numbers_.push_back(static_cast<uint32_t>(line));
    longest_ = std::max(longest_, static_cast<int64_t>(text.size()));
  }
  data.resize(written);
  if (buffer_.empty()) {
    buffer_ = std::move(data);
  } else {
    buffer_ += data;
  }
}

std::string TextLines::where(int64_t i) const {
  const auto file = std::upper_bound(first_of_file_.begin(), first_of_file_.end(), i) -
                    first_of_file_.begin() - 1;
  return detail::concat("'", paths_[static_cast<size_t>(file)], "' line ",
                        line_numbers_[static_cast<size_t>(i)]);
}

}  // namespace unitrain
