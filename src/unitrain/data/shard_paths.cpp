#include "unitrain/data/shard_paths.h"

#include <glob.h>

#include <algorithm>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

bool is_pattern(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> expand_glob(const std::string& pattern, const std::string& who) {
  glob_t found{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &found);
  std::vector<std::string> out;
  if (rc == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
  }
  ::globfree(&found);
  UT_CHECK(rc == 0 || rc == GLOB_NOMATCH, who, ": path '", pattern,
           "': the pattern could not be expanded (glob error ", rc, ")");
  UT_CHECK(!out.empty(), who, ": path '", pattern,
           "' matches no file (a relative pattern is read from the current directory)");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> shard_paths(const std::string& path, const std::vector<std::string>& paths,
                                     const std::string& who) {
  UT_CHECK(path.empty() || paths.empty(), who,
           ": give path (a file or a glob) or paths (a list of files), not both");
  UT_CHECK(!path.empty() || !paths.empty(), who,
           ": no data files: give path (a file or a glob such as data/train_*.bin) or paths");
  if (!paths.empty()) return paths;
  if (is_pattern(path)) return expand_glob(path, who);
  return {path};
}

}  // namespace unitrain
