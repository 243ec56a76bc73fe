// StopSignalGuard on its own: a listed signal sets the flag instead of ending the process, the
// first one counts, and the handlers it replaced come back; after hold() (in a child process: it
// lasts until the process ends) a signal before the guard or after it is never fatal.
#include "unitrain/engine/loop/stop_signal.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <csignal>
#include <cstdlib>

namespace unitrain {
namespace {

void mark_usr1(int) {}

sighandler_t handler_of(int sig) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

TEST(StopSignalGuard, ASaveSignalSetsTheFlagAndThePreviousHandlerComesBack) {
  const sighandler_t before = std::signal(SIGUSR1, &mark_usr1);
  const sighandler_t usr2 = handler_of(SIGUSR2);
  {
    StopSignalGuard guard({SIGUSR1, SIGTERM});
    EXPECT_EQ(StopSignalGuard::received(), 0);
    EXPECT_EQ(handler_of(SIGUSR2), usr2);  // not listed: untouched
    std::raise(SIGUSR1);
    EXPECT_EQ(StopSignalGuard::received(), SIGUSR1);
    std::raise(SIGTERM);  // the first one is the run's outcome
    EXPECT_EQ(StopSignalGuard::received(), SIGUSR1);
  }
  EXPECT_EQ(handler_of(SIGUSR1), &mark_usr1);
  {
    StopSignalGuard again({SIGUSR1});
    EXPECT_EQ(StopSignalGuard::received(), 0);  // a new guard starts afresh
  }
  std::signal(SIGUSR1, before);
}

/// hold() of SIGTERM, SIGUSR1 and SIGUSR2 with them blocked first, as the command line does.
void hold_as_the_command_line_does() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::raise(SIGTERM);  // during start-up: pending while blocked
  StopSignalGuard::hold({SIGTERM, SIGUSR1, SIGUSR2});
}

TEST(StopSignalGuardDeathTest, AfterHoldASignalBeforeTheRunStopsItAndOneAfterChangesNothing) {
  EXPECT_EXIT(
      {
        hold_as_the_command_line_does();
        if (StopSignalGuard::received() != SIGTERM) std::_Exit(3);  // delivered at hold
        {
          StopSignalGuard run({SIGTERM, SIGUSR1});
          if (StopSignalGuard::received() != SIGTERM) std::_Exit(4);  // the run sees it
          if (handler_of(SIGUSR2) != SIG_DFL) std::_Exit(5);          // not the run's: its default
        }
        std::raise(SIGUSR2);  // after the run: held again
        std::raise(SIGUSR1);
        std::_Exit(StopSignalGuard::received() == SIGTERM ? 0 : 6);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopSignalGuardDeathTest, AHeldSignalTheRunDoesNotSaveOnEndsTheProcess) {
  // checkpoint.on_signal.signals: [SIGUSR1]: a SIGTERM held during start-up ends the process
  // as it would have without the hold.
  EXPECT_EXIT(
      {
        hold_as_the_command_line_does();
        StopSignalGuard run({SIGUSR1});
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace unitrain
