#include "unitrain/report/axis_ticks.h"

#include <gtest/gtest.h>

#include <cmath>

namespace unitrain::report {

TEST(AxisTicks, RoundStepsEncloseTheData) {
  const AxisTicks a = axis_ticks(0.4353, 0.9305, 5);
  EXPECT_DOUBLE_EQ(a.lo, 0.4);
  EXPECT_DOUBLE_EQ(a.hi, 1.0);
  EXPECT_EQ(a.labels, (std::vector<std::string>{"0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"}));
  const AxisTicks steps = axis_ticks(0, 69, 6);
  EXPECT_EQ(steps.labels, (std::vector<std::string>{"0", "20", "40", "60", "80"}));
  ASSERT_EQ(steps.values.size(), steps.labels.size());
  EXPECT_LE(steps.values.front(), 0);
  EXPECT_GE(steps.values.back(), 69);
}

TEST(AxisTicks, QuarterStepsGetTheirDecimalAndSmallRangesTheirs) {
  EXPECT_EQ(axis_ticks(0, 1, 4).labels,
            (std::vector<std::string>{"0.00", "0.25", "0.50", "0.75", "1.00"}));
  EXPECT_EQ(axis_ticks(0, 0.002, 4).labels,
            (std::vector<std::string>{"0.0000", "0.0005", "0.0010", "0.0015", "0.0020"}));
  EXPECT_EQ(axis_ticks(-1, 1, 4).labels,
            (std::vector<std::string>{"-1.0", "-0.5", "0.0", "0.5", "1.0"}));
}

TEST(AxisTicks, OneValueOrNothingFiniteStillGivesAnAxis) {
  const AxisTicks one = axis_ticks(5, 5);
  EXPECT_LT(one.lo, 5);
  EXPECT_GT(one.hi, 5);
  const AxisTicks zero = axis_ticks(0, 0);
  EXPECT_LT(zero.lo, 0);
  EXPECT_GT(zero.hi, 0);
  const AxisTicks none = axis_ticks(std::nan(""), INFINITY);
  EXPECT_DOUBLE_EQ(none.lo, 0);
  EXPECT_DOUBLE_EQ(none.hi, 1);
  EXPECT_GE(none.values.size(), 2u);
}

}  // namespace unitrain::report
