// StopSignalGuard on its own: a listed signal sets the flag instead of ending the process, the
// first one counts, and the handlers it replaced come back.
#include "unitrain/engine/loop/stop_signal.h"

#include <gtest/gtest.h>

#include <csignal>

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

}  // namespace
}  // namespace unitrain
