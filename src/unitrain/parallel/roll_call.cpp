#include "unitrain/parallel/roll_call.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/parallel/dist_env.h"

namespace unitrain {
namespace {

/// How long rank 0 waits before it ends over a disagreement, so that the other rank can still
/// read rank 0's entry from a store rank 0 hosts.
constexpr std::chrono::milliseconds kLinger(2000);

struct Arrival {
  int world_size = 0;
  std::string host;
};

std::string key_of(int rank) { return "unitrain_roll/" + std::to_string(rank); }

/// The rank's entry when it has arrived.
std::optional<Arrival> arrival_of(c10d::Store& store, int rank) {
  const std::string key = key_of(rank);
  if (!store.check({key})) return std::nullopt;
  const std::vector<uint8_t> bytes = store.get(key);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  Arrival a;
  in >> a.world_size >> a.host;
  return a;
}

[[noreturn]] void disagree(const DistEnv& env, const std::string& host, int other,
                           const Arrival& theirs) {
  throw TrainError(fmt::format(
      "rank {} ({}) was started for a world of {} ({}={}), rank {} ({}) for a world of {}: "
      "every rank must be given the same world size — the launcher's variables disagree (ranks "
      "started by hand or by two launchers?)",
      env.rank, host, env.world_size, env.world_size_variable, env.world_size, other, theirs.host,
      theirs.world_size));
}

[[noreturn]] void not_arrived(const DistEnv& env, const std::vector<int>& missing,
                              std::chrono::milliseconds timeout) {
  throw TrainError(fmt::format(
      "rank(s) {} of a world of {} ({}={}) did not arrive within {} s (distributed.timeout): "
      "is the launcher starting {} processes, and do they reach the rendezvous?",
      fmt::join(missing, ", "), env.world_size, env.world_size_variable, env.world_size,
      std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), env.world_size));
}

}  // namespace

void roll_call(c10d::Store& store, const DistEnv& env, const std::string& host,
               std::chrono::milliseconds timeout,
               const std::function<void(const std::string&)>& waiting,
               std::chrono::milliseconds note_after) {
  const std::string mine = std::to_string(env.world_size) + " " + host;
  // Rank 0 reads everyone's entry, the others rank 0's: any disagreement is one with rank 0's,
  // and a world of thousands does not poll one store thousands of times over.
  std::vector<int> missing;
  for (int r = 0; r < env.world_size; ++r) {
    if (r != env.rank && (env.rank == 0 || r == 0)) missing.push_back(r);
  }
  const auto start = std::chrono::steady_clock::now();
  std::chrono::milliseconds pause(10);
  bool noted = false;
  try {
    store.set(key_of(env.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
    for (;;) {
      std::vector<int> still;
      for (int r : missing) {
        const std::optional<Arrival> a = arrival_of(store, r);
        if (!a)
          still.push_back(r);
        else if (a->world_size != env.world_size) {
          // Rank 0's store (where it hosts it) stays a moment, for the other to read why.
          if (env.rank == 0) std::this_thread::sleep_for(std::min(timeout, kLinger));
          disagree(env, host, r, *a);
        }
      }
      missing = still;
      if (missing.empty()) return;
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited >= timeout) not_arrived(env, missing, timeout);
      if (!noted && waited >= note_after) {
        noted = true;
        waiting(fmt::format("waiting for rank(s) {} to arrive ({} of {} here)",
                            fmt::join(missing, ", "), env.world_size - int(missing.size()),
                            env.world_size));
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(200));
    }
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(
        fmt::format("rank {} lost the rendezvous store while the ranks gathered "
                    "(did rank 0 end?): {}",
                    env.rank, std::string(e.what()).substr(0, 300)));
  }
}

}  // namespace unitrain
