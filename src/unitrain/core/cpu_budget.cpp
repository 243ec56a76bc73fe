#include "unitrain/core/cpu_budget.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>


namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

/// cgroup v2's cpu.max at `dir` and above: the smallest quota, in CPUs.
std::optional<double> quota_v2(fs::path dir, const fs::path& root) {
  std::optional<double> out;
  for (;;) {
    if (auto line = first_line_of((dir / "cpu.max").string())) {
      std::istringstream in(*line);
      std::string quota;
      double period = 0;
      if (in >> quota >> period && quota != "max" && period > 0) {
        const double cpus = std::atof(quota.c_str()) / period;
        if (cpus > 0 && (!out || cpus < *out)) out = cpus;
      }
    }
    if (dir == root || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return out;
}

/// cgroup v1's cpu.cfs_quota_us / cpu.cfs_period_us at `dir` and above.
std::optional<double> quota_v1(fs::path dir, const fs::path& root) {
  std::optional<double> out;
  for (;;) {
    const auto quota = first_line_of((dir / "cpu.cfs_quota_us").string());
    const auto period = first_line_of((dir / "cpu.cfs_period_us").string());
    if (quota && period) {
      const double q = std::atof(quota->c_str()), p = std::atof(period->c_str());
      if (q > 0 && p > 0 && (!out || q / p < *out)) out = q / p;
    }
    if (dir == root || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return out;
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
  const auto line = first_line_of("/proc/" + std::to_string(pid) + "/stat");
  if (!line) return 0;
  const size_t close = line->rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(line->substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {  // fields 3.. after "pid (comm)"
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / double(::sysconf(_SC_CLK_TCK));
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
  std::ifstream groups(proc_cgroup);
  const fs::path root(cgroup_root);
  for (std::string line; std::getline(groups, line);) {
    // hierarchy-ID:controller-list:cgroup-path
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const std::string rel = path.substr(std::min(path.size(), path.find_first_not_of('/')));
    std::optional<double> q;
    if (controllers.empty()) {  // cgroup v2
      for (const fs::path& mount : {root, root / "unified"}) {
        if (auto v = quota_v2(mount / rel, mount); v && (!q || *v < *q)) q = v;
      }
    } else {
      std::istringstream names(controllers);
      bool cpu = false;
      for (std::string n; std::getline(names, n, ',');) cpu |= n == "cpu";
      if (!cpu) continue;
      for (const std::string& mount : {controllers, std::string("cpu"), std::string("cpu,cpuacct")}) {
        std::error_code ec;
        if (fs::is_directory(root / mount, ec)) {
          q = quota_v1(root / mount / rel, root / mount);
          break;
        }
      }
    }
    if (q && (!limits.quota || *q < *limits.quota)) limits.quota = q;
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
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  s.own = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
          double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  for (int pid : siblings_) s.own += process_seconds(pid);
  return s;
}

double CpuLoadProbe::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_.at).count();
}

double CpuLoadProbe::others_busy() const {
  const Sample now = sample();
  const double wall = std::chrono::duration<double>(now.at - start_.at).count();
  if (wall <= 0) return 0;
  return std::max(0.0, ((now.busy - start_.busy) - (now.own - start_.own)) / wall);
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
    const auto line = first_line_of("/proc/" + name + "/stat");
    if (!line) continue;
    const size_t close = line->rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream in(line->substr(close + 2));
    std::string state;
    int ppid = 0;
    in >> state >> ppid;
    std::error_code exe_ec;
    if (ppid == parent && fs::read_symlink("/proc/" + name + "/exe", exe_ec) == exe) {
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
