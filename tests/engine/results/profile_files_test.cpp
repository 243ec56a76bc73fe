// A profiled run's files on their own: summary.json and the trace under run_dir/profile, rank
// R's named for it, none without recorded steps or a run folder.
#include "unitrain/engine/results/profile_files.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/profile/profiler.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

TEST(ProfileFiles, GoToTheRunFolderByRankAndOnlyForRecordedSteps) {
  RunSettings settings;
  settings.run_dir = test::temp_dir();
  ProfileResult p;
  write_profile(p, settings, 0, 10);  // no step recorded: a warning, no file
  EXPECT_FALSE(fs::exists(settings.run_dir + "/profile"));
  p.steps = 3;
  p.table = "phase table";
  p.summary_json = "{}";
  write_profile(p, settings, 0, 10);
  EXPECT_TRUE(fs::exists(settings.run_dir + "/profile/summary.json"));
  EXPECT_FALSE(fs::exists(settings.run_dir + "/profile/trace-rank-0.json"));  // no trace asked
  p.trace_json = "[]";
  write_profile(p, settings, 1, 10);
  EXPECT_TRUE(fs::exists(settings.run_dir + "/profile/summary-rank-1.json"));
  EXPECT_TRUE(fs::exists(settings.run_dir + "/profile/trace-rank-1.json"));
  RunSettings test_mode = settings;
  test_mode.run_dir = test::temp_dir() + "/unused";
  test_mode.train.test_mode = true;  // no run folder
  write_profile(p, test_mode, 0, 1);
  EXPECT_FALSE(fs::exists(test_mode.run_dir));
}

}  // namespace
}  // namespace unitrain
