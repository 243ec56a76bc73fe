#pragma once
// LaunchRounds: how the launchers of a run on several machines agree on each start of the
// workers (a round), so that every machine's workers of a restart meet each other and never an
// earlier round's. Machine 0's launcher hosts a store that outlives the workers; round N's
// workers meet in it under their own prefix (TORCHELASTIC_RESTART_COUNT=N, with
// TORCHELASTIC_USE_AGENT_STORE=True, as under torchrun's agent). A launcher whose worker failed
// ends the round for all of them; each stops its workers, and round N+1 starts on every machine
// only once every machine's workers of round N have ended.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/parallel/c10d_fwd.h"

namespace unitrain {

struct LaunchOptions;

/// One launcher's view of the rounds, over a store the `nnodes` launchers share. Every call
/// reads or writes the store once per key and does not wait; a store that cannot be reached
/// (machine 0's launcher gone) throws c10d's error.
class LaunchRounds {
 public:
  /// Machine 0's launcher hosts the store at `options.master_addr:master_port`, listening on
  /// that address only; the others connect to it, trying for up to `options.rendezvous_seconds`.
  /// TrainError naming the address when it cannot be hosted or reached; ConfigError when
  /// master_addr is not an address of machine 0.
  static c10::intrusive_ptr<c10d::Store> connect(const LaunchOptions& options);

  /// The launcher of machine `node_rank` of `nnodes`, over `store`. `shape` is what every
  /// launcher must have been started with alike (workers per machine, machines, restarts).
  LaunchRounds(c10::intrusive_ptr<c10d::Store> store, int node_rank, int nnodes, std::string shape);

  /// Says that this machine is ready for `round`: its workers of the rounds before have ended.
  void arrive(int round);
  /// The machines that have not arrived at `round` yet (empty: start the workers). ConfigError
  /// naming the machine when one arrived with another shape.
  std::vector<int> missing(int round);

  /// Ends `round` for every machine because of `cause` (a worker of this machine failed), unless
  /// another machine ended it first; returns the cause that stands (this one or the earlier).
  std::string end(int round, const std::string& cause);
  /// Why `round` was ended, once a machine has ended it.
  std::optional<std::string> ended(int round);

  /// Says that this machine's launcher has ended for good (`why`): the others stop waiting for
  /// it at their next round.
  void leave(const std::string& why);
  /// "machine R: why" of each launcher that has left, by machine.
  std::vector<std::string> left();

 private:
  std::string key(int round, const std::string& what) const;
  std::optional<std::string> read(const std::string& key);

  c10::intrusive_ptr<c10d::Store> store_;
  int node_rank_;
  int nnodes_;
  std::string shape_;
};

}  // namespace unitrain
