#include "unitrain/engine/loop/stop_signal.h"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <vector>

#include "unitrain/core/save_signals.h"
#include "unitrain/log/console.h"

namespace unitrain {
namespace {

volatile std::sig_atomic_t g_received = 0;
/// The handlers the guard replaced, by signal number (signals are below 65).
std::array<struct sigaction, 65> g_old{};
/// The signals hold() holds; empty without it.
std::vector<int> g_held;
/// hold()'s exit status for a signal held through a set-up that never reaches a guard.
std::atomic<int> g_hold_exit_code{75};
/// Whether a guard has been made since hold().
std::atomic<bool> g_guarded{false};

bool contains(const std::vector<int>& list, int sig) {
  return std::find(list.begin(), list.end(), sig) != list.end();
}

void set_handler(int sig, void (*handler)(int), struct sigaction* old) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(sig, &sa, old);
}

// Internal linkage, no C name: the library adds no global symbol to its users' programs.
void on_stop_signal(int sig) {
  if (g_received != 0 && sig == SIGINT) {
    static const char msg[] = "\nsecond interrupt: exiting now, without a checkpoint\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(128 + SIGINT);
  }
  if (g_received == 0 && sig == SIGINT) {
    // Said at once: a second Ctrl-C right after must not be the first word the user reads.
    static const char msg[] =
        "\ninterrupt: stopping after this step with a checkpoint (Ctrl-C again: exit now, "
        "without one)\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  }
  if (g_received == 0) g_received = sig;  // the first one is the run's outcome
}

}  // namespace

StopSignalGuard::StopSignalGuard(const std::vector<int>& save_signals) {
  g_guarded = true;
  handled_.push_back(SIGINT);
  for (int sig : save_signals) {
    if (!contains(handled_, sig)) handled_.push_back(sig);
  }
  if (g_held.empty()) {
    g_received = 0;
  } else if (const int early = g_received; early != 0 && !contains(handled_, early)) {
    // Held before this run read its config, which does not save on it: the default action.
    set_handler(early, SIG_DFL, nullptr);
    ::raise(early);
  }
  for (int sig : handled_) set_handler(sig, on_stop_signal, &g_old[sig]);
  for (int sig : g_held) {
    if (contains(handled_, sig)) continue;
    set_handler(sig, SIG_DFL, &g_old[sig]);
    handled_.push_back(sig);
  }
}

StopSignalGuard::~StopSignalGuard() {
  for (int sig : handled_) sigaction(sig, &g_old[sig], nullptr);
}

void StopSignalGuard::hold(const std::vector<int>& signals, double grace) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : signals) {
    if (!contains(g_held, sig)) g_held.push_back(sig);
    set_handler(sig, on_stop_signal, nullptr);
    sigaddset(&set, sig);
  }
  // Watches the set-up until the first guard: a signal held longer than `grace` without one
  // ends the process, as one while waiting for data does (StallWatchdog).
  std::thread([grace] {
    using Clock = std::chrono::steady_clock;
    Clock::time_point seen{};
    while (!g_guarded) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (g_received == 0 || g_guarded) continue;
      const auto now = Clock::now();
      if (seen == Clock::time_point{}) seen = now;
      if (now - seen < std::chrono::duration<double>(grace)) continue;
      log::error(fmt::format(
          "{} during set-up, and training did not start within {:g} s (stuck joining the other "
          "processes?): ending the process without a checkpoint (nothing was trained since the "
          "last one); run the same command to resume",
          signal_name(g_received), grace));
      log::flush();
      std::_Exit(g_hold_exit_code);
    }
  }).detach();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void StopSignalGuard::set_hold_exit_code(int exit_code) { g_hold_exit_code = exit_code; }

int StopSignalGuard::received() { return g_received; }

}  // namespace unitrain
