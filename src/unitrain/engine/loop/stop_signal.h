#pragma once
// StopSignalGuard: SIGINT and the checkpoint.on_signal signals end training cleanly, after the
// current step and a checkpoint.
#include <vector>

namespace unitrain {

/// While alive, SIGINT and each of `save_signals` (checkpoint.on_signal: SIGTERM, SIGUSR1 by
/// default) set a flag instead of ending the process: the Trainer sees it after the current
/// micro-batch, writes a checkpoint and stops (the CLI then exits with 130 after SIGINT,
/// checkpoint.on_signal.exit_code after the others). A second SIGINT exits at once with 130.
/// The previous handlers are restored on destruction; signals not listed keep theirs.
///
/// A program whose whole life is a run (the unitrain command line's train) calls
/// hold() first, so that a scheduler's signal is never fatal, before the loop or after it.
class StopSignalGuard {
 public:
  explicit StopSignalGuard(const std::vector<int>& save_signals);
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  /// The signal received since the guard was made (or, after hold(), since then), or 0.
  static int received();

  /// From now until the process ends, each of `signals` is held: its arrival is recorded for
  /// received() instead of ending the process; then they are unblocked (the command line
  /// blocks them before any library starts). A guard made later keeps a signal held before
  /// it (the run then stops after its first micro-batch, with a checkpoint), ends the process
  /// by a held signal its own list does not name (checkpoint.on_signal.signals: it would have
  /// ended it without the hold), gives the held signals it does not handle their default action
  /// while it lives, and hands them all back to the hold when it ends. A signal held before any
  /// guard is made ends the process (with set_hold_exit_code's status, 75 until then) if none
  /// is made within `grace` seconds
  /// (set-up stuck joining the other processes stays stoppable; nothing was trained since the
  /// last checkpoint). Process-wide: for a program's main, never called by the library itself.
  static void hold(const std::vector<int>& signals, double grace = 10);
  /// The exit status for that end, once the run's config is read (checkpoint.on_signal).
  static void set_hold_exit_code(int exit_code);

 private:
  std::vector<int> handled_;  ///< SIGINT and the save signals: the handlers it replaced
};

}  // namespace unitrain
