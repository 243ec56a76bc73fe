#pragma once
// CpuBudget: the CPUs a process may use (its affinity mask, its cgroup's CPU quota) and how
// busy other programs keep them, measured from /proc/stat. What `train.threads: auto` and
// `data.loader.workers: auto` are chosen from.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unitrain {

/// The CPUs this process may run on: sched_getaffinity's count, and the cgroup's CPU quota
/// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) when one is set.
struct CpuLimits {
  int affinity = 1;
  std::optional<double> quota;  ///< CPUs' worth of time per period, e.g. 1.5
  /// min(affinity, quota), at least 1.
  double usable() const;
};

/// Reads this process's limits: its cgroups as `proc_cgroup` lists them, under `cgroup_root`
/// (v2 at the root or, on hybrid systems, in unified/; v1 in cpu/ or cpu,cpuacct/); a quota set
/// on any ancestor counts, the smallest wins.
CpuLimits read_cpu_limits(const std::string& cgroup_root = "/sys/fs/cgroup",
                          const std::string& proc_cgroup = "/proc/self/cgroup");

/// How much CPU other programs used on this process's CPUs between its construction and
/// others_busy(): the CPUs' busy time in /proc/stat (user, nice, system, irq, softirq, steal)
/// minus this process's own CPU time and that of `siblings` (the other workers of the same
/// job, whose use is already counted by dividing among them). The window should span at least
/// 100 ms (the kernel counts in 10 ms ticks); the constructor is cheap (two file reads).
class CpuLoadProbe {
 public:
  explicit CpuLoadProbe(std::vector<int> siblings = {});
  /// CPUs' worth of time others kept busy, averaged over the window (>= 0), and the window's
  /// length in seconds.
  double others_busy() const;
  double seconds() const;

 private:
  struct Sample {
    std::chrono::steady_clock::time_point at;
    double busy = 0;               ///< seconds of busy CPU time, summed over this process's CPUs
    double own = 0;                ///< this process's CPU seconds
    std::vector<double> siblings;  ///< each sibling's CPU seconds (0: gone)
    int cpus = 1;                  ///< how many CPUs this process may run on
  };
  Sample sample() const;
  std::vector<int> siblings_;
  Sample start_;
};

/// A probe begun at the first call: call it as early as the process can (the CLI's main, the
/// Trainer's constructor) so that its first reading spans the set-up (data, model).
CpuLoadProbe& startup_load_probe();

/// The pids of the other processes with this process's parent and executable: the other
/// workers of `unitrain launch`, torchrun or mpirun on this machine.
std::vector<int> sibling_workers();

}  // namespace unitrain
