#include "unitrain/launch/signal_pipe.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "unitrain/core/error.h"
#include "unitrain/core/save_signals.h"

namespace unitrain {
namespace {

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const int saved = errno;
  const char c = static_cast<char>(sig);
  ssize_t ignored = ::write(g_signal_pipe[1], &c, 1);
  (void)ignored;
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe() {
  UT_CHECK_TRAIN(::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) == 0,
                 "launch: pipe: ", std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : signals()) ::sigaction(sig, &sa, &old_[sig]);
  // The command line blocks them from before the libraries start (apps/unitrain/main.cpp): one
  // that came since is forwarded now.
  sigset_t set;
  sigemptyset(&set);
  for (int sig : signals()) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, &old_mask_);
}

SignalPipe::~SignalPipe() {
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  for (auto& [sig, old] : old_) ::sigaction(sig, &old, nullptr);
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  g_signal_pipe[0] = g_signal_pipe[1] = -1;
}

int SignalPipe::fd() const { return g_signal_pipe[0]; }

const std::array<int, 7>& SignalPipe::signals() {
  static const std::array<int, 7> all = [] {
    std::array<int, 7> a{SIGCHLD, SIGINT};
    static_assert(std::tuple_size_v<std::decay_t<decltype(save_signals())>> == 5);
    for (size_t i = 0; i < save_signals().size(); ++i) a[2 + i] = save_signals()[i].number;
    return a;
  }();
  return all;
}

}  // namespace unitrain
