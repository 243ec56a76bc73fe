#pragma once
// LibTorch's intra-op threads for a run (`train.threads`): how many compute, chosen once, and
// how they wait, which follows the machine's load.
//
// The count is part of the arithmetic: LibTorch's CPU reductions (a loss's mean, a sum of
// 100,000 floats) and OpenBLAS's matrix products split their sums by thread, so another count
// gives other low bits, and they grow through training (bench/busy/thread_numerics.py). So the
// count never follows the load: `auto` is the CPUs this process may use (affinity, cgroup
// quota) shared by the job's workers on this machine — not how busy they are — and a resumed
// run keeps the count it started with (trainer_state.json's `threads`). What follows the load
// is the waiting: beside busy programs the threads stop spinning while they wait
// (ShortOpenMpWaits), which keeps a busy machine fast and changes no number.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
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
  /// Makes the threads' waits short (true) or as the OpenMP runtime's settings say (false).
  using WaitSwitch = std::function<void(bool)>;

  /// Applies `count` (set_threads) for the run. With more than one thread and waits that can
  /// be shortened (ShortOpenMpWaits::unavailable_reason() == ""), the waiting follows the load:
  /// short from the start when set-up already saw busy programs.
  ThreadGovernor(ThreadCount count, int64_t local_workers);
  /// The same with the load, the CPUs and the switch given (tests): `switch_waits` empty = the
  /// waiting never follows the load.
  ThreadGovernor(ThreadCount count, int64_t local_workers, double limits_usable,
                 LoadReader read_load, WaitSwitch switch_waits,
                 std::chrono::duration<double> interval = std::chrono::seconds(2));
  ~ThreadGovernor();

  /// The count in use (already applied with set_threads); it never changes.
  int64_t threads() const { return count_.threads; }
  /// The run's first lines: the count and why, then how the threads wait.
  const std::string& why() const { return count_.why; }
  const std::string& waits() const { return waits_why_; }
  /// True while the threads' waits are short (other programs need the CPUs).
  bool short_waits() const { return short_; }
  /// Called once per optimizer step (cheap: a clock read). Every interval it reads the load:
  /// short waits as soon as others need CPUs, spinning again once two readings in a row say
  /// they are free. Returns a line saying so when the waiting changed.
  std::optional<std::string> follow();

 private:
  bool busy(double others) const;
  ThreadCount count_;
  int64_t workers_ = 1;
  double usable_ = 1;
  LoadReader read_load_;
  WaitSwitch switch_waits_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point last_check_;
  bool short_ = false;
  int quiet_votes_ = 0;
  std::string waits_why_;
};

}  // namespace unitrain
