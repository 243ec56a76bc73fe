#pragma once
// ShortOpenMpWaits: while one lives, the OpenMP threads of LibTorch and OpenBLAS wait for work
// by spinning only a moment before they sleep, instead of spinning for milliseconds. It changes
// how threads wait, never how many compute nor how the work is split, so no number changes.
//
// Why: GNU OpenMP (libgomp, the OpenMP of Debian's and pytorch.org's LibTorch) spins a waiting
// thread up to ~300,000 times before it sleeps. On a quiet machine that is the fastest policy;
// beside another program, a spinning thread holds the CPU that the thread it waits for needs,
// and every parallel region waits with it (2 threads beside one busy program ran a small MLP
// 6x slower than 1 thread; docs/performance.md). libgomp spins only 100 times whenever it
// manages more threads than the process's CPUs, and chooses afresh at every wait: an idle team
// of one more thread than the CPUs, parked asleep on a thread of its own, makes that so.
// libgomp offers no other switch after start-up (OMP_WAIT_POLICY and GOMP_SPINCOUNT are read
// once, when it loads).
#include <memory>
#include <string>

namespace unitrain {

class ShortOpenMpWaits {
 public:
  /// "" when waits can be shortened in this process; else why not: LibTorch's OpenMP is not
  /// libgomp, or the environment already sets how threads wait (OMP_WAIT_POLICY,
  /// GOMP_SPINCOUNT: the user's choice, kept) or caps the threads (OMP_THREAD_LIMIT).
  static std::string unavailable_reason();

  /// Parks the idle team (returns once it is parked). Requires unavailable_reason() == "".
  ShortOpenMpWaits();
  /// Ends the team: waits spin as libgomp's settings say again.
  ~ShortOpenMpWaits();
  ShortOpenMpWaits(const ShortOpenMpWaits&) = delete;
  ShortOpenMpWaits& operator=(const ShortOpenMpWaits&) = delete;

  /// The threads of the parked team (the CPUs libgomp counts, plus one).
  int team_size() const;

 private:
  struct Team;
  std::unique_ptr<Team> team_;
};

}  // namespace unitrain
