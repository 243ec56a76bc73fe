#pragma once
// RunDirLock: one run per run folder. The process that trains into a run folder holds an
// exclusive advisory lock on run_dir/.lock for its whole life.
#include <memory>
#include <string>

namespace unitrain {

/// Who holds a run folder's lock, as its lock file says.
struct RunDirHolder {
  long pid = 0;
  std::string host;
  std::string since;             ///< UTC, e.g. 2026-11-25T14:02:11Z
  std::string describe() const;  ///< "pid 4242 on host node1 since 2026-11-25T14:02:11Z"
};

/// An exclusive lock on `run_dir/.lock` (flock: the kernel drops it when the process ends, so
/// a run killed with SIGKILL leaves no stale lock; on NFS it is a lock on the server). The file
/// records the holder's pid, host and start time for the message a second run gets; it stays
/// when the lock is released (removing it would let two later runs lock two different files).
/// The descriptor is close-on-exec: a program the run starts does not inherit the lock.
///
/// Example:
///   auto lock = RunDirLock::acquire("runs/x");  // ConfigError when another run trains there
class RunDirLock {
 public:
  /// Creates `run_dir` when missing and takes its lock. ConfigError when another process (or
  /// another RunDirLock of this process) holds it, naming the holder and what to do:
  /// "run folder X is in use by pid N on host H since T; start another run with <new_run>, or
  /// stop that run" (`new_run`: how this run's folder changes, e.g. "--name <new-name>");
  /// ConfigError naming the folder when it cannot be created or locked.
  static std::unique_ptr<RunDirLock> acquire(const std::string& run_dir,
                                             const std::string& new_run = "--name <new-name>");
  /// The lock file of `run_dir`.
  static std::string path_of(const std::string& run_dir);

  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  const std::string& run_dir() const { return run_dir_; }

  /// For a run refused before it wrote anything: when acquire() created the folder and it still
  /// holds nothing but the lock file, removes both (and the parent folders acquire() created
  /// that are empty) and returns true; the lock is then worth nothing (release it). False, and
  /// nothing changed, otherwise.
  bool undo_creation();

 private:
  RunDirLock(std::string run_dir, int fd, std::string created)
      : run_dir_(std::move(run_dir)), fd_(fd), created_(std::move(created)) {}
  std::string run_dir_;
  int fd_ = -1;
  std::string created_;  ///< the outermost folder acquire() created, or "" when none
};

}  // namespace unitrain
