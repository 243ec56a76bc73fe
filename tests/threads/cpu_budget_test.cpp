#include "unitrain/threads/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace unitrain {
namespace {

int affinity_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

TEST(CpuBudget, NoQuotaIsTheAffinityMask) {
  const std::string root = test::temp_dir();
  const std::string groups = test::write_file(root + "/cgroup", "0::/\n4:memory:/x\n1:cpu:/\n");
  test::write_file(root + "/cpu.max", "max 100000\n");  // v2: no quota
  test::write_file(root + "/cpu/cpu.cfs_quota_us", "-1\n");
  test::write_file(root + "/cpu/cpu.cfs_period_us", "100000\n");
  const CpuLimits l = read_cpu_limits(root, groups);
  EXPECT_EQ(l.affinity, affinity_count());
  EXPECT_FALSE(l.quota.has_value());
  EXPECT_EQ(l.usable(), double(affinity_count()));
}

TEST(CpuBudget, CgroupQuotasV1AndV2OnTheGroupOrAnAncestor) {
  const std::string root = test::temp_dir();
  // v2 (hybrid layout: unified/), the quota on the parent of the process's group.
  std::string groups = test::write_file(root + "/a", "0::/job/step\n");
  test::write_file(root + "/unified/job/cpu.max", "150000 100000\n");
  test::write_file(root + "/unified/job/step/cpu.max", "max 100000\n");
  CpuLimits l = read_cpu_limits(root, groups);
  ASSERT_TRUE(l.quota.has_value());
  EXPECT_DOUBLE_EQ(*l.quota, 1.5);
  EXPECT_DOUBLE_EQ(l.usable(), std::min(1.5, double(affinity_count())));

  // v1, mounted as cpu,cpuacct; the group's own quota is the smaller.
  groups = test::write_file(root + "/b", "3:cpu,cpuacct:/docker/abc\n");
  test::write_file(root + "/cpu,cpuacct/docker/cpu.cfs_quota_us", "300000\n");
  test::write_file(root + "/cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
  test::write_file(root + "/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n");
  test::write_file(root + "/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  l = read_cpu_limits(root, groups);
  ASSERT_TRUE(l.quota.has_value());
  EXPECT_DOUBLE_EQ(*l.quota, 0.5);
  EXPECT_DOUBLE_EQ(l.usable(), 1.0);  // never less than one CPU

  // Missing or unreadable files: no quota, no error.
  l = read_cpu_limits(root + "/nothing-here", groups);
  EXPECT_FALSE(l.quota.has_value());
  l = read_cpu_limits(root, root + "/no-such-file");
  EXPECT_FALSE(l.quota.has_value());
}

/// Seconds of CPU time process `pid` has used, from /proc (what the probe reads of siblings).
double cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

pid_t spinning_child() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (volatile unsigned spin = 0;; spin = spin + 1) {
    }
  }
  return pid;
}

TEST(CpuBudget, AnotherProgramsBusyCpuIsCountedAndOursIsNot) {
  // A child spinning through the window is others' load: at least the CPU time it got (the
  // machine is shared, so other programs may add to it; the kernel counts in 10 ms ticks).
  const pid_t hog = spinning_child();
  ASSERT_GT(hog, 0);
  const double hog_before = cpu_seconds_of(hog);
  CpuLoadProbe probe;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double hog_used = cpu_seconds_of(hog) - hog_before;
  const double others = probe.others_busy();
  const double wall = probe.seconds();
  ::kill(hog, SIGKILL);
  ::waitpid(hog, nullptr, 0);
  EXPECT_GE(wall, 0.5);
  EXPECT_GE(others, hog_used / wall - 0.1) << hog_used << " s of " << wall << " s";

  // The same child named as a sibling (another worker of the job): its time is not others'.
  const pid_t sibling = spinning_child();
  ASSERT_GT(sibling, 0);
  const double sibling_before = cpu_seconds_of(sibling);
  CpuLoadProbe with_sibling({int(sibling)});
  CpuLoadProbe without;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double excluded = with_sibling.others_busy(), counted = without.others_busy();
  const double sibling_used = cpu_seconds_of(sibling) - sibling_before;
  const double span = without.seconds();
  ::kill(sibling, SIGKILL);
  ::waitpid(sibling, nullptr, 0);
  // The two probes read the same counters but for the sibling's time (a few ticks apart).
  EXPECT_NEAR(counted - excluded, sibling_used / span, 0.1)
      << counted << " " << excluded << " " << sibling_used;
}

TEST(CpuBudget, ASiblingThatEndsInTheWindowIsNotReadAsOthersLoad) {
  // A sibling (another job started from the same shell) that spun for a while and ends inside
  // the window: its past CPU time must not turn into others' load (it once read "878.7 of 2
  // CPUs busy"); no reading exceeds the CPUs there are.
  const pid_t sibling = spinning_child();
  ASSERT_GT(sibling, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CpuLoadProbe probe({int(sibling)});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(sibling, SIGKILL);
  ::waitpid(sibling, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double others = probe.others_busy();
  EXPECT_LE(others, double(std::thread::hardware_concurrency()));
  EXPECT_GE(others, 0.0);
}

TEST(CpuBudget, SiblingWorkersShareTheParentAndTheProgram) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    ::pause();
    ::_exit(0);
  }
  const pid_t asker = ::fork();
  ASSERT_GE(asker, 0);
  if (asker == 0) {
    const std::vector<int> found = sibling_workers();
    const int n = int(std::count(found.begin(), found.end(), int(other)));
    const char c = char('0' + n);
    if (::write(pipe_fds[1], &c, 1) != 1) ::_exit(2);
    ::_exit(0);
  }
  char c = '?';
  ASSERT_EQ(::read(pipe_fds[0], &c, 1), 1);
  ::waitpid(asker, nullptr, 0);
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  EXPECT_EQ(c, '1');  // the other child: same parent (this test), same executable
  const std::vector<int> mine = sibling_workers();  // this process's siblings: not its children
  EXPECT_EQ(std::count(mine.begin(), mine.end(), int(other)), 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

}  // namespace
}  // namespace unitrain
