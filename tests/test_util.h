#pragma once
// Helpers shared by the unit tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "unitrain/core/error.h"

namespace unitrain::test {

/// The repository root (for checked-in data such as tests/**/expected values).
std::string source_dir();
/// The hub chat templates' references (tests/text/chat_template_references.sh: eight models'
/// tokenizer folders, Jinja2's renderings, the Rust tokenizers' masks), made once; a test
/// failure, not a skip, when npm, node or python3-jinja2 cannot make them.
std::string chat_template_references();
/// Those references' frozen clock (strftime_now's): 2024-07-26 10:30:00 local time, in seconds
/// since the epoch.
int64_t chat_template_clock();
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
