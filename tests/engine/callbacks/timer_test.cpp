#include "unitrain/engine/callbacks/timer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

TEST(Timer, ParsesUnitsAndClockBudgets) {
  EXPECT_EQ(parse_wall_clock("45s", "k"), 45);
  EXPECT_EQ(parse_wall_clock("90m", "k"), 5400);
  EXPECT_EQ(parse_wall_clock("3h50m", "k"), 13800);
  EXPECT_EQ(parse_wall_clock("1d2h", "k"), 93600);
  EXPECT_EQ(parse_wall_clock("1.5h", "k"), 5400);
  EXPECT_EQ(parse_wall_clock("30:00", "k"), 1800);
  EXPECT_EQ(parse_wall_clock("03:50:00", "k"), 13800);
  EXPECT_EQ(parse_wall_clock("1:00:00:05", "k"), 86405);
}

TEST(Timer, ABadBudgetNamesTheKeyAndShowsTheForms) {
  for (const char* bad : {"", "10", "5x", "h", "1:2:3:4:5", "1::2", "m5"}) {
    const std::string what =
        test::error_of<ConfigError>([&] { parse_wall_clock(bad, "timer.budget"); });
    EXPECT_TRUE(test::contains(what, "timer.budget: '" + std::string(bad) + "'")) << what;
    EXPECT_TRUE(test::contains(what, "3h50m")) << what;
  }
  TimerOptions zero;
  zero.budget = "0s";
  EXPECT_THROW(Timer{zero}, ConfigError);
}

TEST(Timer, SaysItsBudgetOnceInTheUnitItReadsIn) {
  EXPECT_EQ(budget_spent_text(1, 1.04), "timer: the time budget of 1 s is spent (after 1.0 s)");
  EXPECT_EQ(budget_spent_text(1.5, 1.52), "timer: the time budget of 1.5 s is spent (after 1.5 s)");
  EXPECT_EQ(budget_spent_text(90, 90.2),
            "timer: the time budget of 1 min 30 s is spent (after "
            "1 min 30 s)");
  EXPECT_EQ(budget_spent_text(13800, 13801),
            "timer: the time budget of 3 h 50 min is spent "
            "(after 3 h 50 min)");
  EXPECT_EQ(budget_spent_text(3600, 3600), "timer: the time budget of 1 h is spent (after 1 h)");
}

}  // namespace
}  // namespace unitrain
