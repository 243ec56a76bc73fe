#pragma once
// TrialProcess: one job of a sweep as a child process (`unitrain train CONFIG`, or `unitrain
// launch ... -- train CONFIG`), its output appended to a log file.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace unitrain {

/// A started child. It runs in a process group of its own (a Ctrl-C at the terminal reaches
/// the sweep, which asks its trials to save and stop) and gets SIGTERM when the sweep process
/// dies (prctl PR_SET_PDEATHSIG: a `kill -9` of the sweep leaves no trial training on, and a
/// SIGTERM saves a checkpoint it resumes from).
class TrialProcess {
 public:
  /// Starts `command` (argv[0] a path) with stdout and stderr appended to `log_file`.
  /// TrainError when it cannot be started.
  TrialProcess(const std::vector<std::string>& command, const std::string& log_file);
  /// Kills the child if it still runs, and reaps it.
  ~TrialProcess();
  TrialProcess(const TrialProcess&) = delete;
  TrialProcess& operator=(const TrialProcess&) = delete;

  /// Its waitpid status when it has ended (once: it is reaped then), without waiting; none
  /// while it runs and after the status was returned.
  std::optional<int> poll();
  /// Sends `sig` to its process group (the launcher's workers too).
  void signal(int sig);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool ended_ = false;
};

}  // namespace unitrain
