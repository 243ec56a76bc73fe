#include "unitrain/threads/preemption_ticks.h"

#include <sched.h>
#include <time.h>

namespace unitrain {
namespace {

// Short enough that a spin barrier waits a fraction of the 4 ms tick; long enough that the
// wake-ups cost little (2,000 a second: well under 1% of a CPU). 0.3-1 ms measured the same on
// the CNN (docs/performance.md).
constexpr long kPeriodNs = 500'000;

void tick_on(int cpu, const std::atomic<bool>& stop) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof(set), &set);
  const timespec period{0, kPeriodNs};
  while (!stop.load(std::memory_order_relaxed)) ::nanosleep(&period, nullptr);
}

}  // namespace

PreemptionTicks::PreemptionTicks(const std::vector<int>& cpus) {
  threads_.reserve(cpus.size());
  for (int cpu : cpus) threads_.emplace_back(tick_on, cpu, std::cref(stop_));
}

PreemptionTicks::~PreemptionTicks() {
  stop_.store(true, std::memory_order_relaxed);
  for (auto& t : threads_) t.join();
}

}  // namespace unitrain
