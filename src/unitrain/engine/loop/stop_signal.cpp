#include "unitrain/engine/loop/stop_signal.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>

namespace unitrain {
namespace {

volatile std::sig_atomic_t g_received = 0;
/// The handlers the guard replaced, by signal number (signals are below 65).
std::array<struct sigaction, 65> g_old{};

// Internal linkage, no C name: the library adds no global symbol to its users' programs.
void on_stop_signal(int sig) {
  if (g_received != 0 && sig == SIGINT) {
    static const char msg[] = "\nsecond interrupt: exiting now, without a checkpoint\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(128 + SIGINT);
  }
  if (g_received == 0) g_received = sig;  // the first one is the run's outcome
}

}  // namespace

StopSignalGuard::StopSignalGuard(const std::vector<int>& save_signals) {
  g_received = 0;
  handled_.push_back(SIGINT);
  for (int sig : save_signals) {
    if (std::find(handled_.begin(), handled_.end(), sig) == handled_.end()) {
      handled_.push_back(sig);
    }
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : handled_) sigaction(sig, &sa, &g_old[sig]);
}

StopSignalGuard::~StopSignalGuard() {
  for (int sig : handled_) sigaction(sig, &g_old[sig], nullptr);
}

int StopSignalGuard::received() { return g_received; }

}  // namespace unitrain
