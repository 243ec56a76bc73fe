#pragma once
// How the process keeps freed memory: LibTorch frees and allocates megabytes every step
// (gradients, optimizer temporaries, activations); glibc's defaults hand such blocks back to the
// kernel and map them again, zeroed, on the next step. See docs/performance.md ("Memory").
#include <cstddef>
#include <optional>
#include <string>

namespace unitrain {

/// Tells glibc's malloc to keep freed memory in the process (mallopt: blocks up to 32 MB come
/// from the heap instead of fresh mmaps, and the heap is never trimmed), so a training step reuses
/// the previous step's memory. Process-wide; call it once, early (the `unitrain` command does,
/// first thing). The environment variable UNITRAIN_MALLOC=system leaves glibc's defaults alone.
/// Returns what was done, for the log ("" when left alone). Costs memory: the peak of a step
/// stays mapped (see docs/performance.md).
std::string keep_freed_memory();

/// Undoes keep_freed_memory for a run whose memory is its limit (distributed.zero: 3, chosen to
/// fit a model in less memory): glibc's own thresholds again, fixed at their 128 KB start (a
/// freed block above is unmapped at once; the heap's free top is trimmed), so that a step's
/// freed gathers and gradients do not stay mapped — measured: a 2-worker ZeRO 3 step's peak
/// 573 MB against 868-1029 MB kept (docs/performance.md, "Memory"). Process-wide, as
/// keep_freed_memory. Returns what was done for the log; "" under UNITRAIN_MALLOC=system.
std::string give_back_freed_memory();

/// Hands the memory malloc holds free back to the kernel now (glibc's malloc_trim over every
/// arena; nothing elsewhere): after a phase that freed more than the steps will reuse — a whole
/// model cut into ZeRO 3's parts, checkpoint files read to resume — so that it does not stay in
/// the process (keep_freed_memory keeps it otherwise). Changes no setting. Returns the bytes
/// malloc held free before (0 where unknown).
size_t release_freed_memory();

/// The memory this process may use, as the machine and the kernel limit it.
struct MemoryLimits {
  double ram = 0;  ///< the machine's physical memory, bytes
  /// The smallest memory limit of this process's cgroups and their ancestors (v2 memory.max,
  /// v1 memory.limit_in_bytes); none when unlimited.
  std::optional<double> cgroup;
  /// The processes running this program in that cgroup (its folder and those under it), this
  /// one included: they share its limit (a launcher's workers in the launcher's group), where
  /// workers given a group each share nothing.
  int cgroup_processes = 1;
  std::optional<double> rlimit;  ///< RLIMIT_AS or RLIMIT_DATA, the smaller; none when unlimited

  /// What each of `processes` processes of one job on this machine may use: the machine's
  /// memory divided among them, or the cgroup's among cgroup_processes, under each one's own
  /// rlimit.
  double per_process(int processes) const;
  /// Where per_process(processes) comes from, for a message: "the machine's 23.5 GiB shared by
  /// this job's 2 processes on it", "the memory cgroup's limit of 300.0 MiB", "this process's
  /// RLIMIT_AS / RLIMIT_DATA".
  std::string source(int processes) const;
};

/// This process's limits: its cgroups as `proc_cgroup` lists them, under `cgroup_root`
/// (core/cgroup_files.h), and its rlimits.
MemoryLimits read_memory_limits(const std::string& cgroup_root = "/sys/fs/cgroup",
                                const std::string& proc_cgroup = "/proc/self/cgroup");

/// While one lives on this thread, models built here are checked against 1/`processes` of the
/// memory the machine (or the cgroup) gives: `processes` processes of one job build theirs at
/// once on this machine (a launcher's local world size). train_from_config opens one around the
/// model's construction.
class MemoryShare {
 public:
  explicit MemoryShare(int processes);
  ~MemoryShare();
  MemoryShare(const MemoryShare&) = delete;
  MemoryShare& operator=(const MemoryShare&) = delete;
  /// The processes of the scope open on this thread; 1 when none is.
  static int processes();

 private:
  int processes_;
  MemoryShare* outer_;
};

/// "512 bytes", "300.0 MiB", "23.5 GiB".
std::string memory_text(double bytes);

}  // namespace unitrain
