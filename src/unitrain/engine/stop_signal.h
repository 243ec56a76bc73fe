#pragma once
// StopSignalGuard: SIGINT/SIGTERM end training cleanly, after the current step and a checkpoint.

namespace unitrain {

/// While alive, SIGINT and SIGTERM set a flag instead of killing the process: the Trainer
/// sees it after the current micro-batch, writes a checkpoint and stops (the CLI then exits
/// with 128 + the signal). A second SIGINT exits at once with 130. The previous handlers are
/// restored on destruction.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  /// The signal received since the guard was made, or 0.
  static int received();
};

}  // namespace unitrain
