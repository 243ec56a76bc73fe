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
class StopSignalGuard {
 public:
  explicit StopSignalGuard(const std::vector<int>& save_signals);
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  /// The signal received since the guard was made, or 0.
  static int received();

 private:
  std::vector<int> handled_;  ///< SIGINT and the save signals: the handlers it replaced
};

}  // namespace unitrain
