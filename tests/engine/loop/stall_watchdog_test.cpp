#include "unitrain/engine/loop/stall_watchdog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "unitrain/engine/loop/stop_signal.h"

namespace unitrain {
namespace {

using std::chrono::milliseconds;

WatchdogOptions stall_options(double seconds, StallAction action) {
  WatchdogOptions o;
  o.stall_timeout = seconds;
  o.action = action;
  return o;
}

TEST(StallWatchdog, SaysWhereTheRankIsStuck) {
  EXPECT_EQ(describe_stall(2, 37, "data wait", 31.25, 30),
            "rank 2: no progress for 31.2 s at step 37, phase data wait "
            "(train.watchdog.stall_timeout 30 s)");
}

TEST(StallWatchdogDeathTest, AbortEndsAStalledProcessNamingStepAndPhase) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the log's lines, where the death test reads
        RunPosition position;
        position.enter("data wait", 12);
        StallWatchdog w(stall_options(0.2, StallAction::Abort), position, nullptr, 0);
        std::this_thread::sleep_for(milliseconds(3000));
        std::_Exit(0);  // not reached: the watchdog ends the process first
      },
      ::testing::ExitedWithCode(1),
      "rank 0: no progress for 0\\.[0-9] s at step 12, phase data wait");
}

TEST(StallWatchdogDeathTest, AProcessThatMovesOnIsLeftAlone) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the log's lines, where the death test reads
        RunPosition position;
        StallWatchdog w(stall_options(0.2, StallAction::Abort), position, nullptr, 0);
        for (int i = 0; i < 40; ++i) {  // 0.8 s, four stall timeouts, moving every 20 ms
          position.enter("forward", i);
          std::this_thread::sleep_for(milliseconds(20));
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StallWatchdogDeathTest, WarnKeepsTheProcessGoing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the log's lines, where the death test reads
        RunPosition position;
        position.enter("validation", 3);
        {
          StallWatchdog w(stall_options(0.3, StallAction::Warn), position, nullptr, 1);
          std::this_thread::sleep_for(milliseconds(800));  // a warning at ~0.3 s
        }
        std::fflush(stdout);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "rank 1: no progress for 0\\.[0-9] s at step 3, phase validation");
}

// A stop signal that finds the training thread waiting for data: said at once; no data within
// the grace, the process ends with the signal's exit code (warn or no stall_timeout alike).
TEST(StallWatchdogDeathTest, AStopSignalWhileWaitingForDataEndsTheProcessAfterTheGrace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the log's lines, where the death test reads
        RunPosition position;
        position.enter("data wait", 7);
        StopSignalGuard signals({SIGTERM});
        StallWatchdog w(stall_options(0, StallAction::Warn), position, nullptr, 0, 75, 0.3);
        std::raise(SIGTERM);
        std::this_thread::sleep_for(milliseconds(3000));
        std::_Exit(0);  // not reached
      },
      ::testing::ExitedWithCode(75),
      "SIGTERM while waiting for data for step 7: the run saves a checkpoint(.|\n)*SIGTERM and "
      "no data for step 7 within 0.3 s");
  // Data comes in time: the process goes on (the loop then stops at the step's end).
  EXPECT_EXIT(
      {
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
        RunPosition position;
        position.enter("data wait", 7);
        StopSignalGuard signals({SIGTERM});
        StallWatchdog w(stall_options(0, StallAction::Warn), position, nullptr, 0, 75, 0.5);
        std::raise(SIGTERM);
        std::this_thread::sleep_for(milliseconds(200));
        position.enter("forward");
        std::this_thread::sleep_for(milliseconds(1000));
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "SIGTERM while waiting for data for step 7");
}

}  // namespace
}  // namespace unitrain
