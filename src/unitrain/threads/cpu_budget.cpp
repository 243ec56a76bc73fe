#include "unitrain/threads/cpu_budget.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "unitrain/core/cgroup_files.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

/// cgroup v2's cpu.max ("<quota> <period>" or "max <period>") of one folder.
std::optional<double> quota_v2(const fs::path& dir) {
  const auto line = first_line_of((dir / "cpu.max").string());
  if (!line) return std::nullopt;
  std::istringstream in(*line);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  return std::atof(quota.c_str()) / period;
}

/// cgroup v1's cpu.cfs_quota_us / cpu.cfs_period_us of one folder (-1: none).
std::optional<double> quota_v1(const fs::path& dir) {
  const auto quota = first_line_of((dir / "cpu.cfs_quota_us").string());
  const auto period = first_line_of((dir / "cpu.cfs_period_us").string());
  if (!quota || !period) return std::nullopt;
  const double q = std::atof(quota->c_str()), p = std::atof(period->c_str());
  if (q <= 0 || p <= 0) return std::nullopt;
  return q / p;
}

/// The fields of /proc/<pid>/stat after "pid (comm)": [0] is field 3 (state), [1] the parent
/// pid, [11] utime, [12] stime. Empty when the process is gone.
std::vector<std::string> stat_fields(const std::string& pid) {
  std::vector<std::string> fields;
  const auto line = first_line_of("/proc/" + pid + "/stat");
  const size_t close = line ? line->rfind(')') : std::string::npos;
  if (close == std::string::npos) return fields;
  std::istringstream in(line->substr(close + 2));
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;
}

std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

/// Seconds of CPU time process `pid` used (utime + stime), or 0 when it is gone.
double process_seconds(int pid) {
  const std::vector<std::string> f = stat_fields(std::to_string(pid));
  if (f.size() < 13) return 0;
  return (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / double(::sysconf(_SC_CLK_TCK));
}

}  // namespace

double CpuLimits::usable() const {
  double n = affinity;
  if (quota) n = std::min(n, *quota);
  return std::max(1.0, n);
}

CpuLimits read_cpu_limits(const std::string& cgroup_root, const std::string& proc_cgroup) {
  CpuLimits limits;
  limits.affinity = std::max<int>(1, static_cast<int>(affinity_cpus().size()));
  // A quota set on any of the process's groups or their ancestors holds; the smallest wins.
  for (const CgroupFolder& folder : cgroup_folders("cpu", cgroup_root, proc_cgroup)) {
    const std::optional<double> q = folder.v2 ? quota_v2(folder.path) : quota_v1(folder.path);
    if (q && *q > 0 && (!limits.quota || *q < *limits.quota)) limits.quota = q;
  }
  return limits;
}

CpuLoadProbe::CpuLoadProbe(std::vector<int> siblings) : siblings_(std::move(siblings)) {
  start_ = sample();
}

CpuLoadProbe::Sample CpuLoadProbe::sample() const {
  Sample s;
  s.at = std::chrono::steady_clock::now();
  const std::vector<int> mine = affinity_cpus();
  const double hz = double(::sysconf(_SC_CLK_TCK));
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream in(line.substr(3));
    int cpu = -1;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!std::binary_search(mine.begin(), mine.end(), cpu)) continue;
    s.busy += (user + nice + system + irq + softirq + steal) / hz;
  }
  s.cpus = static_cast<int>(mine.size());
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  s.own = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
          double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  for (int pid : siblings_) s.siblings.push_back(process_seconds(pid));
  return s;
}

double CpuLoadProbe::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_.at).count();
}

double CpuLoadProbe::others_busy() const {
  const Sample now = sample();
  const double wall = std::chrono::duration<double>(now.at - start_.at).count();
  if (wall <= 0) return 0;
  // Each sibling's own time in the window: one that ended (0 now) or whose pid was taken by
  // another program (less now) is not subtracted, so its whole past is not read as others'.
  double siblings = 0;
  for (size_t i = 0; i < now.siblings.size() && i < start_.siblings.size(); ++i) {
    if (now.siblings[i] > 0) siblings += std::max(0.0, now.siblings[i] - start_.siblings[i]);
  }
  const double others = ((now.busy - start_.busy) - (now.own - start_.own) - siblings) / wall;
  // No more CPUs can be busy than there are (a tick counted late can overshoot a short window).
  return std::clamp(others, 0.0, double(std::max(1, now.cpus)));
}

std::vector<int> sibling_workers() {
  std::vector<int> out;
  const int self = static_cast<int>(::getpid()), parent = static_cast<int>(::getppid());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return out;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::atoi(name.c_str());
    if (pid == self) continue;
    const std::vector<std::string> f = stat_fields(name);
    std::error_code exe_ec;
    if (f.size() > 1 && std::atoi(f[1].c_str()) == parent &&
        fs::read_symlink("/proc/" + name + "/exe", exe_ec) == exe) {
      out.push_back(pid);
    }
  }
  return out;
}

CpuLoadProbe& startup_load_probe() {
  static CpuLoadProbe probe(sibling_workers());
  return probe;
}

}  // namespace unitrain
