#pragma once
// TeamPlacement: where the training thread's OpenMP team (the threads LibTorch and OpenBLAS
// split work over, started from that thread) may run, and how its threads wait. It never
// changes how many threads compute nor how the work is split, so no number changes.
//
// Beside busy programs a team of N threads on N CPUs runs each parallel region at the pace of
// its slowest thread, and a thread that shares a CPU with another program waits for that CPU's
// scheduler, region after region: a 784-1024-1024-10 MLP with 2 threads beside 2 busy programs
// ran 8x slower than with 1 thread (docs/performance.md, "A busy machine"). Confined to the CPUs
// the others leave free, the team's threads take turns there (the kernel moves the other
// programs to the rest) and run as fast as fewer threads would; they must then sleep, not spin,
// while they wait (ShortOpenMpWaits), and where a kernel spins anyway the turns must come
// often (PreemptionTicks).
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace unitrain {

class ShortOpenMpWaits;
class PreemptionTicks;

class TeamPlacement {
 public:
  /// "" when the team can be placed: the environment sets no placement of its own
  /// (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY) and the waits can be made short or are
  /// passive already (OMP_WAIT_POLICY=passive); else why not.
  static std::string unavailable_reason();

  /// For a team of `threads`, started from the calling thread (the one that trains): remembers
  /// its CPUs (sched_getaffinity). Requires unavailable_reason() == "".
  explicit TeamPlacement(int64_t threads);
  /// The team on every CPU it had, waiting as before.
  ~TeamPlacement();
  TeamPlacement(const TeamPlacement&) = delete;
  TeamPlacement& operator=(const TeamPlacement&) = delete;

  /// The team on `cpus` CPUs (the one the calling thread is on, then the next of its set), its
  /// threads sleeping while they wait; 0 = every CPU it had, waiting as before. Called on the
  /// thread that trains. A thread started while the team was confined inherits its CPUs from
  /// the thread that started it (LibTorch's autograd threads, a callback's, a writer's): when
  /// the team moves or widens, and when this ends, each such thread still on the team's CPUs
  /// is given every CPU the team had.
  void place(int64_t cpus);
  /// The CPUs the team may use now (sched_getaffinity's numbers).
  const std::vector<int>& cpus() const { return now_; }
  /// Whether PreemptionTicks run on the team's CPUs (confined to fewer CPUs than it has threads).
  bool ticking() const;

 private:
  void set_team_cpus(const std::vector<int>& cpus);
  /// Every CPU to the threads started since the team was confined that are still on its CPUs.
  void give_back_inherited();
  int64_t threads_;
  std::vector<int> all_, now_;
  std::set<pid_t> before_confined_;  ///< this process's threads when the team was confined
  bool can_shorten_waits_ = false;   ///< ShortOpenMpWaits::unavailable_reason() was ""
  std::unique_ptr<ShortOpenMpWaits> short_waits_;
  std::unique_ptr<PreemptionTicks> ticks_;
};

}  // namespace unitrain
