#pragma once
// WorkerGroup: one start of this node's workers for `unitrain launch` (launcher.h). Spawns them
// with torchrun's variables, passes on their output line by line (prefixed, and into their
// logs), signals and reaps them.
#include <sys/types.h>

#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "unitrain/launch/launcher.h"

namespace unitrain {

class WorkerGroup {
 public:
  /// One of a worker's output pipes.
  struct Stream {
    int fd = -1;
    std::string pending;  ///< a line not yet ended
  };
  struct Worker {
    int rank = 0;
    int local_rank = 0;
    pid_t pid = -1;
    bool running = false;
    int status = 0;  ///< its waitpid status, once it has ended
    Stream out, err;
    std::unique_ptr<std::ofstream> log;
  };

  /// The workers of `options` (which must outlive the group) for their `attempt`-th start
  /// (0: the first; a restart says so in the logs).
  WorkerGroup(const LaunchOptions& options, int attempt);
  /// Kills the workers still running and closes their pipes.
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  /// Starts the workers; TrainError when a log or a worker cannot be started.
  void start();
  /// Forwards a signal the launcher received.
  void forward(int sig);
  /// Asks the running workers to stop (after another one failed); SIGKILL after the grace.
  void stop_all();
  void kill_if_past_grace();
  /// Collects exited workers; returns the first that failed (or null).
  const Worker* reap();
  bool any_running() const;
  /// Reads what is available (waiting up to `timeout_ms`) and passes on whole lines; the bytes
  /// read from `signal_fd` (SignalPipe) go into `signals`.
  void pump(int signal_fd, int timeout_ms, std::vector<int>& signals);
  bool streams_open() const;

  const std::vector<Worker>& workers() const { return workers_; }

 private:
  using Clock = std::chrono::steady_clock;
  class PrivateFolder;

  void spawn(Worker& w, const std::vector<std::string>& env);
  void flush(Worker& w, Stream& s, bool is_err, bool all);
  void emit(Worker& w, const std::string& line, bool is_err);

  const LaunchOptions& o_;
  int attempt_;
  std::unique_ptr<PrivateFolder> rendezvous_;  ///< removed after the workers are gone
  std::vector<Worker> workers_;
  const Worker* first_failure_ = nullptr;
  std::unique_ptr<Clock::time_point> stop_deadline_;
};

}  // namespace unitrain
