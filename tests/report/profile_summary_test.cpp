#include "unitrain/report/profile_summary.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain::report {

TEST(ProfileSummary, ReadsPhasesAndDerivesWhatIsLeftOut) {
  const ProfileSummary p = parse_profile_summary(
      R"({"steps": 10, "phases": [
            {"name": "forward", "total_seconds": 3.0, "mean_ms": 300, "share": 0.75},
            {"name": "backward", "total_seconds": 1.0}], "other": 1})",
      "summary.json");
  EXPECT_EQ(p.steps, 10);
  ASSERT_EQ(p.phases.size(), 2u);
  EXPECT_EQ(p.phases[0].name, "forward");
  EXPECT_DOUBLE_EQ(p.phases[0].mean_ms, 300);
  EXPECT_DOUBLE_EQ(p.phases[0].share, 0.75);
  EXPECT_DOUBLE_EQ(p.phases[1].mean_ms, 100);  // 1 s over 10 steps
  EXPECT_DOUBLE_EQ(p.phases[1].share, 0.25);   // of the 4 s of all phases
}

TEST(ProfileSummary, BadFilesAreNamedWithWhatIsWrong) {
  using test::error_of;
  EXPECT_NE(
      error_of<ConfigError>([] { parse_profile_summary("{", "p.json"); }).find("p.json is not"),
      std::string::npos);
  EXPECT_NE(error_of<ConfigError>([] {
              parse_profile_summary(R"({"steps": 1})", "p.json");
            }).find("\"phases\" must be a list"),
            std::string::npos);
  EXPECT_NE(error_of<ConfigError>([] {
              parse_profile_summary(R"({"phases": [{"name": "fwd", "total_seconds": "x"}]})",
                                    "p.json");
            }).find("phase 'fwd' needs \"total_seconds\""),
            std::string::npos);
  EXPECT_NE(error_of<ConfigError>([] {
              parse_profile_summary(R"({"phases": [{"total_seconds": 1}]})", "p.json");
            }).find("needs a \"name\""),
            std::string::npos);
  EXPECT_NE(error_of<ConfigError>([] {
              parse_profile_summary(R"({"steps": -1, "phases": []})", "p.json");
            }).find("\"steps\" must be a count"),
            std::string::npos);
}

}  // namespace unitrain::report
