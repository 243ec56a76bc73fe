#pragma once
// The text of an exception as a user should read it: LibTorch's c10::Error carries a C++
// backtrace ("Exception raised from ... frame #0 ...") in what(); user-facing messages take its
// message alone.
#include <exception>
#include <string>

namespace unitrain {

/// The message of `e` without a backtrace: what_without_backtrace() for a c10::Error (and its
/// subclasses), what() for anything else; never longer than `max_chars` (cut with "...").
std::string error_text(const std::exception& e, size_t max_chars = 300);

}  // namespace unitrain
