#pragma once
// Errors unitrain throws. Every message names the key, file or value at fault.
#include <sstream>
#include <stdexcept>
#include <string>

namespace unitrain {

/// Bad input found before or while setting up a run: config, usage, files, shapes.
/// The CLI exits with code 2 on it.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

/// A failure during training (non-finite loss, I/O failure mid-run, ...). Exit code 1.
class TrainError : public std::runtime_error {
 public:
  explicit TrainError(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

}  // namespace unitrain

/// Throws ConfigError with the concatenated message when `cond` is false.
#define UT_CHECK(cond, ...)                                                              \
  do {                                                                                   \
    if (!(cond)) throw ::unitrain::ConfigError(::unitrain::detail::concat(__VA_ARGS__)); \
  } while (0)

/// Throws TrainError with the concatenated message when `cond` is false.
#define UT_CHECK_TRAIN(cond, ...)                                                       \
  do {                                                                                  \
    if (!(cond)) throw ::unitrain::TrainError(::unitrain::detail::concat(__VA_ARGS__)); \
  } while (0)
