#pragma once
// The text of an exception as a user should read it: LibTorch's c10::Error carries a C++
// backtrace ("Exception raised from ... frame #0 ...") in what(); user-facing messages take its
// message alone.
#include <exception>
#include <string>
#include <vector>

namespace unitrain {

/// The message of `e` without a backtrace: what_without_backtrace() for a c10::Error (and its
/// subclasses), what() for anything else; never longer than `max_chars` (cut with "...").
std::string error_text(const std::exception& e, size_t max_chars = 300);

/// Up to `max` of `names` for a message, comma-separated, with how many more there are:
/// "a, b, c and 7 more".
std::string some_names(const std::vector<std::string>& names, size_t max = 5);

}  // namespace unitrain
