// The memory a process may use: the machine's, its cgroups' limits (v1 and v2, on the group or
// an ancestor), its rlimits, shared among a job's processes on the machine.
#include "unitrain/core/memory.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace unitrain {
namespace {

constexpr double kMiB = 1024.0 * 1024;

TEST(MemoryLimits, CgroupV1AndV2LimitsOnTheGroupOrAnAncestor) {
  const std::string root = test::temp_dir();
  // v1 (a launcher's shell put in memory/walk/job): the ancestor's limit is the smaller.
  std::string groups = test::write_file(root + "/a", "5:memory:/walk/job\n2:cpu,cpuacct:/\n");
  test::write_file(root + "/memory/walk/memory.limit_in_bytes", "314572800\n");
  test::write_file(root + "/memory/walk/job/memory.limit_in_bytes", "9223372036854771712\n");
  test::write_file(root + "/memory/memory.limit_in_bytes", "9223372036854771712\n");
  MemoryLimits m = read_memory_limits(root, groups);
  ASSERT_TRUE(m.cgroup.has_value());
  EXPECT_DOUBLE_EQ(*m.cgroup, 300 * kMiB);
  EXPECT_GT(m.ram, 0);

  // v2 (hybrid: unified/), the group's own memory.max; "max" above it.
  groups = test::write_file(root + "/b", "0::/job/step\n");
  test::write_file(root + "/unified/job/memory.max", "max\n");
  test::write_file(root + "/unified/job/step/memory.max", "1073741824\n");
  m = read_memory_limits(root, groups);
  ASSERT_TRUE(m.cgroup.has_value());
  EXPECT_DOUBLE_EQ(*m.cgroup, 1024 * kMiB);

  // No limit anywhere.
  groups = test::write_file(root + "/c", "0::/free\n");
  test::write_file(root + "/free/memory.max", "max\n");
  EXPECT_FALSE(read_memory_limits(root, groups).cgroup.has_value());
}

TEST(MemoryLimits, TheSharedLimitIsDividedAmongTheProcessesAndSaysWhere) {
  MemoryLimits m;
  m.ram = 8192 * kMiB;
  EXPECT_DOUBLE_EQ(m.per_process(1), 8192 * kMiB);
  EXPECT_DOUBLE_EQ(m.per_process(4), 2048 * kMiB);
  EXPECT_EQ(m.source(1), "the machine's 8.0 GiB");
  EXPECT_EQ(m.source(4), "the machine's 8.0 GiB shared by this job's 4 processes on it");
  m.cgroup = 1024 * kMiB;  // a worker's own group: not shared
  EXPECT_DOUBLE_EQ(m.per_process(2), 1024 * kMiB);
  EXPECT_EQ(m.source(2), "the memory cgroup's limit of 1.0 GiB");
  m.cgroup_processes = 2;  // the launcher's group, its two workers in it
  EXPECT_DOUBLE_EQ(m.per_process(2), 512 * kMiB);
  EXPECT_EQ(m.source(2),
            "the memory cgroup's limit of 1.0 GiB shared by the 2 processes of this program in it");
  m.rlimit = 100 * kMiB;  // each process's own: not divided
  EXPECT_DOUBLE_EQ(m.per_process(2), 100 * kMiB);
  EXPECT_EQ(m.source(2), "this process's RLIMIT_AS / RLIMIT_DATA");
}

TEST(MemoryShare, ScopesNestAndEndWithTheirBlock) {
  EXPECT_EQ(MemoryShare::processes(), 1);
  {
    const MemoryShare four(4);
    EXPECT_EQ(MemoryShare::processes(), 4);
    {
      const MemoryShare one(1);
      EXPECT_EQ(MemoryShare::processes(), 1);
    }
    EXPECT_EQ(MemoryShare::processes(), 4);
  }
  EXPECT_EQ(MemoryShare::processes(), 1);
}

}  // namespace
}  // namespace unitrain
