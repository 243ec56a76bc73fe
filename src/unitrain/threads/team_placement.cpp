#include "unitrain/threads/team_placement.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "unitrain/threads/openmp_waits.h"
#include "unitrain/threads/preemption_ticks.h"

namespace unitrain {
namespace {

/// The CPUs thread `tid` may run on (0: the calling thread); empty when it cannot be read (the
/// thread has ended).
std::vector<int> cpus_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(tid, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

cpu_set_t cpu_set_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return set;
}

/// The ids of this process's threads now (/proc/self/task).
std::set<pid_t> threads_of_this_process() {
  std::set<pid_t> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string name = task.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit))
      out.insert(pid_t(std::stol(name)));
  }
  return out;
}

bool passive_policy() {
  const char* v = std::getenv("OMP_WAIT_POLICY");
  if (v == nullptr) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "passive";
}

}  // namespace

std::string TeamPlacement::unavailable_reason() {
  for (const char* name : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::string(name) + "=" + v + " is set";
  }
  if (passive_policy()) return "";
  return ShortOpenMpWaits::unavailable_reason();
}

TeamPlacement::TeamPlacement(int64_t threads)
    : threads_(threads),
      all_(cpus_of(0)),
      now_(all_),
      can_shorten_waits_(ShortOpenMpWaits::unavailable_reason().empty()) {}

TeamPlacement::~TeamPlacement() { place(0); }

bool TeamPlacement::ticking() const { return ticks_ != nullptr; }

void TeamPlacement::place(int64_t cpus) {
  std::vector<int> want = all_;
  if (cpus > 0 && cpus < int64_t(all_.size())) {
    // Where this thread runs now first: the kernel has just found it a CPU.
    const int here = ::sched_getcpu();
    auto first = std::find(all_.begin(), all_.end(), here);
    if (first == all_.end()) first = all_.begin();
    want.clear();
    for (int64_t i = 0; i < cpus; ++i) {
      want.push_back(*(all_.begin() + (first - all_.begin() + i) % all_.size()));
    }
  }
  const bool confined = want.size() < all_.size();
  // Short waits before the threads share CPUs; spinning again only once they no longer do.
  if (confined && !short_waits_ && can_shorten_waits_) {
    short_waits_ = std::make_unique<ShortOpenMpWaits>();
  }
  if (want != now_) {
    // The ticks stop first: they are threads started while the team was confined.
    ticks_.reset();
    set_team_cpus(want);
  }
  if (!confined) short_waits_.reset();
  // More team threads than CPUs take turns on them: a spinning one yields within a tick of
  // ours, not the kernel's.
  if (confined && int64_t(want.size()) < threads_ && !ticks_) {
    ticks_ = std::make_unique<PreemptionTicks>(want);
  }
}

void TeamPlacement::set_team_cpus(const std::vector<int>& cpus) {
  const cpu_set_t set = cpu_set_of(cpus);
  // Each of the team's threads sets its own; threads libgomp makes later inherit the calling
  // thread's.
  const int n = static_cast<int>(threads_);
#pragma omp parallel num_threads(n)
  { ::sched_setaffinity(0, sizeof(set), &set); }
  if (now_ != all_) give_back_inherited();
  now_ = cpus;
  // What is here now is the team or was here before it was confined.
  if (now_ != all_) before_confined_ = threads_of_this_process();
}

void TeamPlacement::give_back_inherited() {
  const cpu_set_t all = cpu_set_of(all_);
  for (pid_t tid : threads_of_this_process()) {
    if (before_confined_.count(tid) == 0 && cpus_of(tid) == now_)
      ::sched_setaffinity(tid, sizeof(all), &all);
  }
  before_confined_.clear();
}

}  // namespace unitrain
