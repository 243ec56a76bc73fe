#pragma once
// Helpers shared by the unit tests.
#include <functional>
#include <string>

namespace unitrain::test {

/// The repository root (for checked-in data such as tests/**/expected values).
std::string source_dir();
/// A fresh empty temporary directory, removed at exit.
std::string temp_dir();
/// Writes `text` to `path` (creating parent folders) and returns `path`.
std::string write_file(const std::string& path, const std::string& text);
/// The message of the exception `f` throws, or "" when it throws none.
std::string message_of(const std::function<void()>& f);

}  // namespace unitrain::test
