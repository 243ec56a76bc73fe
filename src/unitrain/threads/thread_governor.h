#pragma once
// LibTorch's intra-op threads for a run (`train.threads`): how many compute, chosen once, and
// where they run and how they wait, which follow the machine's load.
//
// The count is part of the arithmetic: LibTorch's CPU reductions (a sum of 100,000 floats) and
// OpenBLAS's matrix products split their sums by thread, so another count gives other low bits,
// and they grow through training (bench/busy/thread_numerics.py). So the count never follows
// the load: `auto` is the CPUs this process may use (affinity, cgroup quota) shared by the
// job's workers on this machine — not how busy they are — and a resumed run keeps the count it
// started with (trainer_state.json's `threads`). What follows the load is the team's place:
// beside busy programs its threads run on the CPUs the others leave free and sleep while they
// wait (TeamPlacement), which keeps a busy machine fast and changes no number.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace unitrain {

/// The BLAS library this process loaded (resolved path of libblas.so.3 or libopenblas), or
/// "unknown". Debian's libtorch calls whatever libblas.so.3 points to.
std::string loaded_blas_library();

/// Sets LibTorch's intra-op (and OpenMP) thread count.
void set_threads(int64_t threads);

/// A run's thread count and why.
struct ThreadCount {
  int64_t threads = 1;
  bool automatic = false;  ///< chosen by auto (the job's ranks then agree on the smallest)
  std::string why;         ///< "threads 2 (...)", the run's first lines
  std::string warning;     ///< "" or why a resume will not be bitwise (another count than before)
};

/// Where a run's count comes from. `configured`: train.threads (0 = auto); `omp_num_threads`:
/// the environment's OMP_NUM_THREADS (nullptr = unset); `local_workers`: the job's processes on
/// this machine; `usable`: CpuLimits::usable(); `recorded`: the count the checkpoint this run
/// resumes from computed with (0 = a fresh start, another world size, or not recorded).
ThreadCount choose_thread_count(int64_t configured, const char* omp_num_threads,
                                int64_t local_workers, double usable, int64_t recorded);

class ThreadGovernor {
 public:
  /// What other programs keep busy (CPUs' worth) since the last call; the first call covers
  /// the time since the process started to set up.
  using LoadReader = std::function<double()>;
  /// Places the team on `cpus` CPUs, sleeping while they wait (0 = every CPU, as it was).
  using Placement = std::function<void(int64_t cpus)>;

  /// Applies `count` (set_threads) for the run; on the thread that trains. With more than one
  /// thread and a team that can be placed (TeamPlacement::unavailable_reason() == ""), the
  /// team's place follows the load: confined from the start when set-up saw busy programs.
  ThreadGovernor(ThreadCount count, int64_t local_workers);
  /// The same with the load, the CPUs and the placement given (tests): `place` empty = the
  /// team's place never follows the load.
  ThreadGovernor(ThreadCount count, int64_t local_workers, double limits_usable,
                 LoadReader read_load, Placement place,
                 std::chrono::duration<double> interval = std::chrono::seconds(2));
  ~ThreadGovernor();

  /// The count in use (already applied with set_threads); it never changes.
  int64_t threads() const { return count_.threads; }
  /// The run's first lines: the count and why, then where the team runs.
  const std::string& why() const { return count_.why; }
  const std::string& placement() const { return placement_why_; }
  /// The CPUs this process may use (affinity and cgroup quota, read when it was made: the team's
  /// confinement is not counted).
  double usable_cpus() const { return usable_; }
  /// The CPUs the team is confined to while others keep CPUs busy; 0 = every CPU.
  int64_t confined_to() const { return confined_to_; }
  /// Called once per optimizer step (cheap: a clock read). Every interval it reads the load:
  /// onto fewer CPUs as soon as others need them, onto more once two readings in a row say they
  /// are free. Returns a line saying so when the place changed.
  std::optional<std::string> follow();

 private:
  /// The CPUs to confine the team to with `others` CPUs' worth busy; 0 = none needed.
  int64_t cpus_for(double others) const;
  std::string where(int64_t cpus) const;
  ThreadCount count_;
  int64_t workers_ = 1;
  double usable_ = 1;
  LoadReader read_load_;
  Placement place_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point last_check_;
  int64_t confined_to_ = 0;
  int raise_votes_ = 0;
  std::string placement_why_;
};

}  // namespace unitrain
