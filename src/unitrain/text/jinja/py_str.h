#pragma once
// Python's str methods on UTF-8 text, by code point: what chat templates call (strip, split,
// title, ...) with Python's Unicode rules for whitespace and case (through utf8proc).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain::jinja::py {

/// The code points of `s` (invalid UTF-8 bytes read as U+FFFD).
std::u32string decode(std::string_view s);
std::string encode(const std::u32string& s);
int64_t length(std::string_view s);

/// str.isspace() of one code point.
bool is_space(char32_t c);
/// str.isprintable() of one code point (repr escapes the others).
bool is_printable(char32_t c);
bool is_alpha(char32_t c);
bool is_digit(char32_t c);
bool is_alnum(char32_t c);
bool is_lower(char32_t c);
bool is_upper(char32_t c);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
/// str.title(): a cased letter after an uncased character is upper, the others lower.
std::string title(std::string_view s);
/// str.capitalize(): the first character title case, the rest lower.
std::string capitalize(std::string_view s);
std::string swapcase(std::string_view s);

/// str.strip / lstrip / rstrip: `chars` (code points) or, when absent, whitespace.
std::string strip(std::string_view s, const std::u32string* chars, bool left, bool right);
/// str.split(sep, maxsplit) and rsplit: no `sep` splits on runs of whitespace.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit,
                               bool from_right);
/// str.splitlines(keepends).
std::vector<std::string> splitlines(std::string_view s, bool keepends);
/// str.replace(old, new, count): count < 0 replaces all.
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
/// str.find: the code point index of `sub` in s[start:end], or -1.
int64_t find(std::string_view s, std::string_view sub, bool from_right);
int64_t count(std::string_view s, std::string_view sub);
/// s[start:stop:step] by code point, with Python's slice rules (`has_*` false: omitted).
std::string slice(std::string_view s, bool has_start, int64_t start, bool has_stop, int64_t stop,
                  int64_t step);

/// Python's slice indices of a sequence of `n` items: the positions s[start:stop:step] takes.
std::vector<int64_t> slice_positions(int64_t n, bool has_start, int64_t start, bool has_stop,
                                     int64_t stop, int64_t step);

}  // namespace unitrain::jinja::py
