#include "unitrain/core/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

TEST(CpuBudget, AnotherProgramsBusyCpuIsCountedAndOursIsNot) {
  // A child spinning for the whole window: one CPU's worth of others' load (or more: the
  // machine is shared, so only a floor is asserted).
  const pid_t hog = ::fork();
  ASSERT_GE(hog, 0);
  if (hog == 0) {
    for (volatile unsigned spin = 0;; spin = spin + 1) {
    }
  }
  CpuLoadProbe probe;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double others = probe.others_busy();
  ::kill(hog, SIGKILL);
  ::waitpid(hog, nullptr, 0);
  EXPECT_GE(probe.seconds(), 0.4);
  if (affinity_count() >= 2) EXPECT_GE(others, 0.6);

  // The same work as a sibling (another worker of the job): not others' load.
  const pid_t sibling = ::fork();
  ASSERT_GE(sibling, 0);
  if (sibling == 0) {
    for (volatile unsigned spin = 0;; spin = spin + 1) {
    }
  }
  CpuLoadProbe with_sibling({int(sibling)});
  CpuLoadProbe without;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double counted = without.others_busy(), excluded = with_sibling.others_busy();
  ::kill(sibling, SIGKILL);
  ::waitpid(sibling, nullptr, 0);
  if (affinity_count() >= 2) EXPECT_GE(counted - excluded, 0.6) << counted << " " << excluded;
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
