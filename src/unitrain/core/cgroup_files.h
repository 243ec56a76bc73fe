#pragma once
// The folders of this process's cgroups where a controller's limits are (cgroup v2's unified
// hierarchy, or v1's hierarchy of that controller): what the CPU quota and the memory limit are
// read from.
#include <string>
#include <vector>

namespace unitrain {

/// A folder of a cgroup hierarchy and which version's files it holds.
struct CgroupFolder {
  std::string path;
  bool v2 = true;  ///< cgroup v2 (cpu.max, memory.max); else v1 (cpu.cfs_quota_us, ...)
};

/// The folders of the cgroups `proc_cgroup` lists (/proc/self/cgroup: hierarchy-ID:controllers:
/// path) that hold `controller`'s files ("cpu", "memory"), under `cgroup_root`: the v2 group at
/// the root or, on hybrid systems, in unified/; the v1 group in the controller's own hierarchy
/// (its folder as /proc lists the controllers, the controller's name, or cpu,cpuacct); each
/// with every folder above it up to its hierarchy's root, innermost first (a limit set on an
/// ancestor holds for the groups under it). Folders that do not exist are left out.
std::vector<CgroupFolder> cgroup_folders(const std::string& controller,
                                         const std::string& cgroup_root = "/sys/fs/cgroup",
                                         const std::string& proc_cgroup = "/proc/self/cgroup");

}  // namespace unitrain
