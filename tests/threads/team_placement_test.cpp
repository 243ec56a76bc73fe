#include "unitrain/threads/team_placement.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>
#include <torch/torch.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace unitrain {
namespace {

/// Cpus_allowed_list of each thread of this process (/proc/self/task/<tid>/status), counted.
std::map<std::string, int> threads_by_cpus() {
  std::map<std::string, int> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0)
        out[line.substr(line.find_first_not_of(" \t", 18))]++;
    }
  }
  return out;
}

/// threads_by_cpus() once it equals `want`, or after a second: a thread that has been joined
/// can still be listed for a moment while the kernel finishes its exit.
std::map<std::string, int> threads_by_cpus_once(const std::map<std::string, int>& want) {
  for (int i = 0; i < 1000 && threads_by_cpus() != want; ++i) {
    const timespec ms{0, 1'000'000};
    ::nanosleep(&ms, nullptr);
  }
  return threads_by_cpus();
}

std::string cpus_of_this_thread() {
  std::ifstream status("/proc/thread-self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0)
      return line.substr(line.find_first_not_of(" \t", 18));
  }
  return "";
}

TEST(TeamPlacement, ConfinesTheTeamAndPutsItBack) {
  ASSERT_GE(CPU_COUNT([] {
              static cpu_set_t s;
              ::sched_getaffinity(0, sizeof(s), &s);
              return &s;
            }()),
            2)
      << "this test needs 2 CPUs";
  const int threads_were = torch::get_num_threads();
  torch::set_num_threads(2);
  const torch::Tensor ones = torch::ones({1 << 20});
  EXPECT_EQ(ones.sum().item<float>(), float(1 << 20));  // the team of two exists
  const std::string all = cpus_of_this_thread();
  const auto threads_were_on = threads_by_cpus();
  {
    TeamPlacement team(2);
    team.place(1);
    ASSERT_EQ(team.cpus().size(), 1u);
    const std::string one = std::to_string(team.cpus()[0]);
    EXPECT_EQ(cpus_of_this_thread(), one);
    EXPECT_GE(threads_by_cpus()[one], 2) << "the team's other thread is confined too";
    EXPECT_TRUE(team.ticking()) << "two threads take turns on one CPU";
    // The same sums, on one CPU.
    EXPECT_EQ(ones.sum().item<float>(), float(1 << 20));
    // A thread started now (as LibTorch starts its autograd threads at the first backward)
    // inherits the team's CPU, and is given them all back when the team widens.
    std::mutex mutex;
    std::condition_variable cv;
    bool started = false, done = false;
    std::string born_on, widened_to;
    std::thread born([&] {
      std::unique_lock<std::mutex> lock(mutex);
      born_on = cpus_of_this_thread();
      started = true;
      cv.notify_all();
      cv.wait(lock, [&] { return done; });
      widened_to = cpus_of_this_thread();
    });
    {
      std::unique_lock<std::mutex> lock(mutex);
      cv.wait(lock, [&] { return started; });
    }
    EXPECT_EQ(born_on, one);
    team.place(0);
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    cv.notify_all();
    born.join();
    EXPECT_EQ(widened_to, all);
    EXPECT_EQ(cpus_of_this_thread(), all);
    EXPECT_FALSE(team.ticking());
    EXPECT_EQ(threads_by_cpus_once(threads_were_on), threads_were_on);
    team.place(1);
  }
  EXPECT_EQ(cpus_of_this_thread(), all);  // put back when it ends
  EXPECT_EQ(threads_by_cpus_once(threads_were_on), threads_were_on);
  torch::set_num_threads(threads_were);
}

TEST(TeamPlacement, AnEnvironmentsPlacementIsKept) {
  ::setenv("OMP_PROC_BIND", "close", 1);
  EXPECT_EQ(TeamPlacement::unavailable_reason(), "OMP_PROC_BIND=close is set");
  ::unsetenv("OMP_PROC_BIND");
}

}  // namespace
}  // namespace unitrain
