#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

namespace unitrain::test {
namespace fs = std::filesystem;

std::string source_dir() { return UNITRAIN_SOURCE_DIR; }

namespace {
struct TempDirs {
  std::mutex mu;
  std::vector<fs::path> dirs;
  ~TempDirs() {
    for (const auto& d : dirs) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}
}  // namespace

std::string chat_template_references() {
  static const std::string dir = [] {
    const std::string out = source_dir() + "/examples/data/generated/chat_templates";
    const std::string cmd = source_dir() + "/tests/text/chat_template_references.sh " + out;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << " (needs npm, node and python3-jinja2)";
    return out;
  }();
  return dir;
}

int64_t chat_template_clock() {
  std::tm t{};
  t.tm_year = 2024 - 1900;
  t.tm_mon = 6;
  t.tm_mday = 26;
  t.tm_hour = 10;
  t.tm_min = 30;
  t.tm_isdst = -1;
  return static_cast<int64_t>(std::mktime(&t));
}

std::string temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "unitrain-test-XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  if (made == nullptr) throw std::runtime_error("mkdtemp failed");
  std::lock_guard<std::mutex> lock(temp_dirs().mu);
  temp_dirs().dirs.emplace_back(made);
  return made;
}

std::string write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  return path;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace unitrain::test
