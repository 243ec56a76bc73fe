#pragma once
// The text of an exception as a user should read it: LibTorch's c10::Error carries a C++
// backtrace ("Exception raised from ... frame #0 ...") in what(); user-facing messages take its
// message alone.
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain {

/// The message of `e` without a backtrace: what_without_backtrace() for a c10::Error (and its
/// subclasses), what() for anything else; never longer than `max_chars` (cut with "..." at a
/// character's boundary). Bytes that are not UTF-8 (from a user's file or argument) are written
/// as `\xff` (escape_non_utf8).
std::string error_text(const std::exception& e, size_t max_chars = 300);

/// True when `text` is valid UTF-8 (no stray continuation bytes, overlong forms, surrogates or
/// code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);
/// `text` with each byte that is not part of a valid UTF-8 sequence written as `\xNN` (two
/// lowercase hex digits); valid text is returned as it is.
std::string escape_non_utf8(std::string_view text);

/// Up to `max` of `names` for a message, comma-separated, with how many more there are:
/// "a, b, c and 7 more".
std::string some_names(const std::vector<std::string>& names, size_t max = 5);

}  // namespace unitrain
