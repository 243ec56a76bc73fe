#include "unitrain/engine/stop_signal.h"

#include <unistd.h>

#include <csignal>

namespace unitrain {
namespace {

volatile std::sig_atomic_t g_received = 0;
struct sigaction g_old_int, g_old_term;

extern "C" void on_stop_signal(int sig) {
  if (g_received != 0 && sig == SIGINT) {
    static const char msg[] = "\nsecond interrupt: exiting now, without a checkpoint\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(128 + SIGINT);
  }
  g_received = sig;
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  g_received = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignalGuard::~StopSignalGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopSignalGuard::received() { return g_received; }

}  // namespace unitrain
