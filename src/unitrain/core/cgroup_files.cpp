#include "unitrain/core/cgroup_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace unitrain {
namespace {

namespace fs = std::filesystem;

/// `dir` and each folder above it up to `root`, as far as they exist.
void add_up_to(fs::path dir, const fs::path& root, bool v2, std::vector<CgroupFolder>& out) {
  std::error_code ec;
  for (;;) {
    if (fs::is_directory(dir, ec)) out.push_back({dir.string(), v2});
    if (dir == root || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
}

}  // namespace

std::vector<CgroupFolder> cgroup_folders(const std::string& controller,
                                         const std::string& cgroup_root,
                                         const std::string& proc_cgroup) {
  std::vector<CgroupFolder> out;
  std::ifstream groups(proc_cgroup);
  const fs::path root(cgroup_root);
  for (std::string line; std::getline(groups, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const std::string rel = path.substr(std::min(path.size(), path.find_first_not_of('/')));
    if (controllers.empty()) {  // cgroup v2
      for (const fs::path& mount : {root, root / "unified"})
        add_up_to(mount / rel, mount, true, out);
      continue;
    }
    std::istringstream names(controllers);
    bool listed = false;
    for (std::string n; std::getline(names, n, ',');) listed |= n == controller;
    if (!listed) continue;
    for (const std::string& mount : {controllers, controller, std::string("cpu,cpuacct")}) {
      std::error_code ec;
      if (fs::is_directory(root / mount, ec)) {
        add_up_to(root / mount / rel, root / mount, false, out);
        break;
      }
    }
  }
  return out;
}

}  // namespace unitrain
