#pragma once
// The launcher (`unitrain launch`): starts this machine's workers with torchrun's variables,
// prefixes and logs their output, forwards SIGINT and the checkpoint.on_signal signals, ends
// the group when one fails, and restarts it when asked.
#include <functional>
#include <string>
#include <vector>

namespace unitrain {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// Restarts of the whole group after a worker fails (workers resume from their checkpoint).
  /// On several machines every launcher restarts its workers together (launch_rounds.h).
  int max_restarts = 0;
  /// Several machines: how long a launcher waits for the others, at the start (machine 0's to
  /// be reachable, every machine's to arrive) and at each restart.
  double rendezvous_seconds = 300;
  /// After a failure: seconds between SIGTERM to the other workers and SIGKILL.
  double grace_seconds = 10;
  /// A worker that exits with this status saved a checkpoint after a signal (the workers'
  /// checkpoint.on_signal.exit_code, 75 by default): it did not fail, and the launcher returns
  /// the status once the others have ended (they stop at the same step).
  int resume_exit_code = 75;
  /// Folder for rank-<R>.log (each worker's output, both streams); "" = none.
  std::string log_dir;
  /// Each worker's command line; argv[0] is looked up in PATH.
  std::vector<std::string> command;
  /// The workers are unitrain (train): the signals a run saves on stay blocked from the fork
  /// through exec until the worker's main holds them, so that one forwarded while a worker
  /// starts is never fatal. False for another program, which gets them unblocked.
  bool workers_hold_signals = false;
  /// Where prefixed output lines go (`stderr` for the worker's stderr); default: the
  /// launcher's own stdout/stderr.
  std::function<void(const std::string& line, bool stderr)> output;
};

/// Runs the workers of this node until they all end; returns the launcher's exit status:
/// 0 when every worker succeeded; after a signal (SIGINT or one of save_signals(), forwarded to
/// the workers, or sent to the workers directly) the workers' status (130 after SIGINT,
/// resume_exit_code after a signal that saved a checkpoint); after a failure with no restarts
/// left the failed worker's exit status (1 when it was killed by a signal, or failed on another
/// machine), with a message naming the rank and how it ended. On several machines (nnodes > 1)
/// machine 0's launcher hosts the rendezvous store at master_addr:master_port, and a failure on
/// any machine restarts (or ends) the workers of every machine together. ConfigError for bad
/// options; TrainError when the machines' launchers cannot meet.
int launch(const LaunchOptions& options);

/// "exited with status 3" / "was killed by signal 9 (Killed)", for a waitpid status.
std::string describe_exit(int wait_status);

}  // namespace unitrain
