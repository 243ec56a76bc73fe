#include "unitrain/core/memory.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "unitrain/core/cgroup_files.h"

namespace unitrain {

std::string keep_freed_memory() {
  const char* choice = std::getenv("UNITRAIN_MALLOC");
  if (choice != nullptr && std::strcmp(choice, "system") == 0) return "";
  // 32 MB is the largest threshold glibc accepts (half its per-thread heap size on 64-bit);
  // larger blocks are still mapped per allocation, which for them costs little per byte.
  constexpr int kMmapThreshold = 32 << 20;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;  // >= 1 GB free at the top
  if (!mmap_ok || !trim_ok) return "";
  return "malloc keeps freed memory (mmap threshold 32 MB, no trimming below 1 GB; "
         "UNITRAIN_MALLOC=system turns this off)";
}

std::string give_back_freed_memory() {
  const char* choice = std::getenv("UNITRAIN_MALLOC");
  if (choice != nullptr && std::strcmp(choice, "system") == 0) return "";
  constexpr int kGlibcStart = 128 * 1024;  // glibc's initial mmap and trim thresholds
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kGlibcStart) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, kGlibcStart) == 1;
  if (!mmap_ok || !trim_ok) return "";
  release_freed_memory();  // what was kept until now
  return "malloc gives freed memory back (mmap and trim thresholds 128 KB): the run's memory "
         "is its limit";
}

size_t release_freed_memory() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const size_t free_bytes = mallinfo2().fordblks;
  malloc_trim(0);
  return free_bytes;
#elif defined(__GLIBC__)
  malloc_trim(0);
  return 0;
#else
  return 0;
#endif
}

namespace {

/// A cgroup file's byte count; none for "max" (v2), v1's near-2^63 "unlimited", or no file.
std::optional<double> limit_in(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text == "max") return std::nullopt;
  char* end = nullptr;
  const double bytes = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0' || bytes <= 0 || bytes >= 0x1p62) return std::nullopt;
  return bytes;
}

thread_local MemoryShare* current_share = nullptr;

/// The processes running this program (/proc/self/exe) in cgroup folder `dir` and the folders
/// under it (their cgroup.procs), this one included and its parent left out (`unitrain
/// launch`, which starts the workers and holds no model); at most 4096 folders are read.
int processes_of_this_program_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || dir.empty()) return 1;
  const std::string parent = std::to_string(::getppid());
  int count = 0, folders = 0;
  auto count_in = [&](const fs::path& folder) {
    std::ifstream procs(folder / "cgroup.procs");
    for (std::string pid; std::getline(procs, pid);) {
      std::error_code e;
      if (pid.empty() || pid == parent) continue;
      if (fs::read_symlink("/proc/" + pid + "/exe", e) == exe && !e) ++count;
    }
  };
  count_in(dir);
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end && folders < 4096;
       it.increment(ec)) {
    std::error_code e;
    if (it->is_directory(e)) {
      ++folders;
      count_in(it->path());
    }
  }
  return count;
}

}  // namespace

MemoryShare::MemoryShare(int processes)
    : processes_(std::max(1, processes)), outer_(current_share) {
  current_share = this;
}

MemoryShare::~MemoryShare() { current_share = outer_; }

int MemoryShare::processes() { return current_share != nullptr ? current_share->processes_ : 1; }

namespace {

/// The tightest of `m`'s limits for each of `processes` processes, and where it comes from.
std::pair<double, std::string> tightest(const MemoryLimits& m, int processes) {
  const int here = std::max(1, processes), in_group = std::max(1, m.cgroup_processes);
  std::pair<double, std::string> out{m.ram / here, "the machine's " + memory_text(m.ram)};
  if (here > 1) out.second += fmt::format(" shared by this job's {} processes on it", here);
  if (m.cgroup && *m.cgroup / in_group < out.first) {
    out = {*m.cgroup / in_group, "the memory cgroup's limit of " + memory_text(*m.cgroup)};
    if (in_group > 1) {
      out.second += fmt::format(" shared by the {} processes of this program in it", in_group);
    }
  }
  if (m.rlimit && *m.rlimit < out.first)
    out = {*m.rlimit, "this process's RLIMIT_AS / RLIMIT_DATA"};
  return out;
}

}  // namespace

double MemoryLimits::per_process(int processes) const { return tightest(*this, processes).first; }

std::string MemoryLimits::source(int processes) const { return tightest(*this, processes).second; }

MemoryLimits read_memory_limits(const std::string& cgroup_root, const std::string& proc_cgroup) {
  MemoryLimits m;
  m.ram = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit r {};
    if (getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
        (!m.rlimit || double(r.rlim_cur) < *m.rlimit)) {
      m.rlimit = double(r.rlim_cur);
    }
  }
  std::string limiting;
  for (const CgroupFolder& folder : cgroup_folders("memory", cgroup_root, proc_cgroup)) {
    const std::optional<double> limit =
        limit_in(folder.path + (folder.v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    if (limit && (!m.cgroup || *limit < *m.cgroup)) {
      m.cgroup = limit;
      limiting = folder.path;
    }
  }
  if (m.cgroup) m.cgroup_processes = std::max(1, processes_of_this_program_in(limiting));
  return m;
}

std::string memory_text(double bytes) {
  if (bytes < 1024.0 * 1024) return fmt::format("{:.0f} bytes", bytes);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace unitrain
