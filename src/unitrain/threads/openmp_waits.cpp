#include "unitrain/threads/openmp_waits.h"

#include <omp.h>

#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

namespace unitrain {
namespace {

/// Which OpenMP runtime this process loaded, from /proc/self/maps: "libgomp", "libomp" (LLVM's,
/// or Intel's libiomp5) or "" when none is mapped.
std::string loaded_openmp() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  bool gomp = false, llvm = false;
  while (std::getline(maps, line)) {
    if (line.find("/libgomp") != std::string::npos) gomp = true;
    if (line.find("/libomp") != std::string::npos || line.find("/libiomp") != std::string::npos)
      llvm = true;
  }
  if (llvm) return "libomp";
  return gomp ? "libgomp" : "";
}

}  // namespace

struct ShortOpenMpWaits::Team {
  std::mutex mutex;
  std::condition_variable changed;
  bool parked = false, done = false;
  int size = 0;
  std::thread thread;
};

std::string ShortOpenMpWaits::unavailable_reason() {
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_THREAD_LIMIT"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::string(name) + "=" + v + " is set";
  }
  const std::string runtime = loaded_openmp();
  if (runtime != "libgomp") {
    return runtime.empty() ? "no OpenMP runtime is loaded"
                           : "the OpenMP runtime is " + runtime + ", not GNU libgomp";
  }
  return "";
}

ShortOpenMpWaits::ShortOpenMpWaits() : team_(std::make_unique<Team>()) {
  Team& t = *team_;
  // The team's threads stay in this thread's pool, asleep at libgomp's dock, until it ends.
  t.thread = std::thread([&t] {
    const int want = omp_get_num_procs() + 1;
    int got = 0;
#pragma omp parallel num_threads(want)
    {
#pragma omp single
      got = omp_get_num_threads();
    }
    std::unique_lock<std::mutex> lock(t.mutex);
    t.size = got;
    t.parked = true;
    t.changed.notify_all();
    t.changed.wait(lock, [&t] { return t.done; });
  });
  std::unique_lock<std::mutex> lock(t.mutex);
  t.changed.wait(lock, [&t] { return t.parked; });
}

ShortOpenMpWaits::~ShortOpenMpWaits() {
  {
    std::lock_guard<std::mutex> lock(team_->mutex);
    team_->done = true;
  }
  team_->changed.notify_all();
  team_->thread.join();  // its pool ends with the thread (libgomp frees it at thread exit)
}

int ShortOpenMpWaits::team_size() const { return team_->size; }

}  // namespace unitrain
