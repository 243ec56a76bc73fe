// Where a process's cgroup limits are: its groups' folders and their ancestors, v1 and v2.
#include "unitrain/core/cgroup_files.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace unitrain {
namespace {

TEST(CgroupFolders, AGroupAndItsAncestorsInnermostFirstOfTheControllersHierarchy) {
  const std::string root = test::temp_dir();
  const std::string groups = test::write_file(root + "/g", "7:memory:/a/b\n3:cpu:/c\n");
  test::write_file(root + "/memory/a/b/x", "");
  test::write_file(root + "/cpu/c/x", "");
  const std::vector<CgroupFolder> f = cgroup_folders("memory", root, groups);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].path, root + "/memory/a/b");
  EXPECT_EQ(f[1].path, root + "/memory/a");
  EXPECT_EQ(f[2].path, root + "/memory");
  EXPECT_FALSE(f[0].v2);
  EXPECT_EQ(cgroup_folders("cpu", root, groups).front().path, root + "/cpu/c");
}

TEST(CgroupFolders, V2AtTheRootAndInUnifiedOnHybridSystems) {
  const std::string root = test::temp_dir();
  const std::string groups = test::write_file(root + "/g", "0::/job\n");
  test::write_file(root + "/job/x", "");
  test::write_file(root + "/unified/job/x", "");
  const std::vector<CgroupFolder> f = cgroup_folders("memory", root, groups);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].path, root + "/job");
  EXPECT_EQ(f[1].path, root);
  EXPECT_EQ(f[2].path, root + "/unified/job");
  EXPECT_TRUE(f[0].v2 && f[3].v2);
}

}  // namespace
}  // namespace unitrain
