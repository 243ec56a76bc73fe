#pragma once
// Helpers shared by the unit tests.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

#include "unitrain/core/error.h"

namespace unitrain::test {

/// The repository root (for checked-in data such as tests/**/expected values).
std::string source_dir();
/// A fresh empty temporary directory, removed at exit.
std::string temp_dir();
/// Writes `text` to `path` (creating parent folders) and returns `path`.
std::string write_file(const std::string& path, const std::string& text);
/// The message of the exception `f` throws, or "" when it throws none.
std::string message_of(const std::function<void()>& f);
/// True when `haystack` contains `needle`.
bool contains(const std::string& haystack, const std::string& needle);

/// The message of the ConfigError `f` throws, or "(no error)" (for tests that expect either).
inline std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

/// The message of the exception of type E that `f` throws; a test failure when it throws
/// nothing or another type.
template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected another exception type, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

}  // namespace unitrain::test
