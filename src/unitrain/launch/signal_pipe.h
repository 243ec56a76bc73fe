#pragma once
// SignalPipe: the launcher's signals as bytes on a pipe, so that one poll loop waits for workers'
// output and for signals alike.
#include <signal.h>

#include <array>
#include <map>

namespace unitrain {

/// While alive, signals() each write their number as one byte into a pipe (read end: fd())
/// instead of running other handlers; the previous handlers come back on destruction. One at a
/// time per process.
class SignalPipe {
 public:
  SignalPipe();
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;
  int fd() const;
  /// SIGCHLD, SIGINT and every signal checkpoint.on_signal may list (save_signals()): the
  /// launcher's, and those it forwards to the workers.
  static const std::array<int, 7>& signals();

 private:
  std::map<int, struct sigaction> old_;
  sigset_t old_mask_;  ///< the thread's mask before: restored on destruction
};

}  // namespace unitrain
