#include "unitrain/threads/preemption_ticks.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace unitrain {
namespace {

/// This process's threads whose Cpus_allowed_list is exactly `cpus`.
int threads_on(const std::string& cpus) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0 &&
          line.substr(line.find_first_not_of(" \t", 18)) == cpus)
        ++n;
    }
  }
  return n;
}

TEST(PreemptionTicks, ATickingThreadOnEachCpuUntilItEnds) {
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(mine), &mine), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  }
  ASSERT_FALSE(cpus.empty());
  const std::string first = std::to_string(cpus.front()), last = std::to_string(cpus.back());
  const int on_first = threads_on(first), on_last = threads_on(last);
  {
    PreemptionTicks ticks(cpus);
    // Each ticking thread pins itself once it runs.
    const auto pinned = [&] {
      return threads_on(first) == on_first + 1 &&
             (cpus.size() == 1 || threads_on(last) == on_last + 1);
    };
    for (int i = 0; i < 2000 && !pinned(); ++i) {
      const timespec ms{0, 1'000'000};
      ::nanosleep(&ms, nullptr);
    }
    EXPECT_TRUE(pinned()) << "one ticking thread on each of the CPUs given";
  }
  EXPECT_EQ(threads_on(first), on_first);
  EXPECT_EQ(threads_on(last), on_last);
}

}  // namespace
}  // namespace unitrain
