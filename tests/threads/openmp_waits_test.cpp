#include "unitrain/threads/openmp_waits.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

extern char** environ;

namespace unitrain {
namespace {

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/// CPU seconds this process spends over `rounds` sums of 2^20 floats (LibTorch splits them
/// over its two threads), each followed by 3 ms without parallel work, in which the other
/// thread waits for the next region.
double cpu_of_waits(int rounds) {
  const torch::Tensor ones = torch::ones({1 << 20});
  const double before = cpu_seconds();
  for (int r = 0; r < rounds; ++r) {
    (void)ones.sum().item<float>();
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  return cpu_seconds() - before;
}

int cpus_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  ::sched_getaffinity(0, sizeof(set), &set);
  return CPU_COUNT(&set);
}

int threads_of_this_process() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) (void)e, ++n;
  return n;
}

/// Runs this test binary again with `filter`, in an environment without OMP_* and GOMP_*
/// variables (libgomp reads them once, when it loads); its exit status.
int rerun_without_openmp_settings(const std::string& filter) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "OMP_", 4) != 0 && std::strncmp(*e, "GOMP_", 5) != 0) env.push_back(*e);
  }
  env.push_back("UNITRAIN_TEST_RERUN=1");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string arg = "--gtest_filter=" + filter;
  char* argv[] = {exe.data(), arg.data(), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execve(exe.c_str(), argv, envp.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ShortOpenMpWaits, TheEnvironmentsSettingsAreKept) {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const std::string was = policy ? policy : "";
  ::unsetenv("OMP_WAIT_POLICY");
  ::setenv("GOMP_SPINCOUNT", "1000", 1);
  EXPECT_EQ(ShortOpenMpWaits::unavailable_reason(), "GOMP_SPINCOUNT=1000 is set");
  ::setenv("GOMP_SPINCOUNT", "", 1);  // empty: libgomp's default, as unset
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  EXPECT_EQ(ShortOpenMpWaits::unavailable_reason(), "OMP_WAIT_POLICY=passive is set");
  ::unsetenv("GOMP_SPINCOUNT");
  if (was.empty())
    ::unsetenv("OMP_WAIT_POLICY");
  else
    ::setenv("OMP_WAIT_POLICY", was.c_str(), 1);
}

TEST(ShortOpenMpWaits, WaitingThreadsSleepWhileOneLives) {
  if (!ShortOpenMpWaits::unavailable_reason().empty()) {
    // scripts/test sets OMP_WAIT_POLICY=PASSIVE for CTest, and this process's libgomp read it
    // when it loaded: the test runs in a process of its own without it.
    ASSERT_EQ(std::getenv("UNITRAIN_TEST_RERUN"), nullptr)
        << "without OMP_* variables: " << ShortOpenMpWaits::unavailable_reason();
    EXPECT_EQ(rerun_without_openmp_settings("ShortOpenMpWaits.WaitingThreadsSleepWhileOneLives"),
              0);
    return;
  }
  const int threads_were = torch::get_num_threads();
  torch::set_num_threads(2);
  cpu_of_waits(5);  // the team of two exists before the counts
  const double spinning = cpu_of_waits(100);
  const int threads_before = threads_of_this_process();
  double sleeping = 0;
  {
    ShortOpenMpWaits waits;
    EXPECT_EQ(waits.team_size(), cpus_of_this_process() + 1);
    EXPECT_EQ(threads_of_this_process(), threads_before + waits.team_size());
    sleeping = cpu_of_waits(100);
  }
  // The team ended with it (its threads leave libgomp's last barrier, then exit).
  for (int i = 0; i < 200 && threads_of_this_process() != threads_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(threads_of_this_process(), threads_before);
  // 100 waits of 3 ms: libgomp's default spins through them (~0.3 s of CPU on a quiet machine);
  // short waits spin 100 times, then sleep: the sums' own CPU, ~0.02 s.
  EXPECT_LT(sleeping, 0.1) << "spinning took " << spinning << " s of CPU";
  const double spinning_again = cpu_of_waits(100);
  EXPECT_GT(spinning_again, 2 * sleeping) << "ending the team did not bring the spinning back";
  torch::set_num_threads(threads_were);
  std::printf(
      "CPU of 100 sums and waits of 3 ms: %.3f s spinning, %.3f s short, %.3f s spinning again\n",
      spinning, sleeping, spinning_again);
}

}  // namespace
}  // namespace unitrain
