#pragma once
// ThreadGovernor: LibTorch's intra-op thread count for a run (`train.threads`). A number is
// kept as given. `auto` starts from the CPUs this process may use (affinity, cgroup quota)
// less what other programs keep busy, shared among the job's workers on this machine, and
// then follows that load during the run: OpenMP threads that wait for a CPU another program
// holds make every parallel region wait (2 threads beside one busy program ran a small MLP 6x
// slower than 1 thread; docs/performance.md), so the count drops when others need CPUs and
// comes back when they are done. On a machine nobody else uses it never changes.
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

class ThreadGovernor {
 public:
  /// What other programs keep busy (CPUs' worth) since the last call; the first call covers
  /// the time since the process started to set up.
  using LoadReader = std::function<double()>;

  /// `threads`: train.threads (0 = auto). `local_workers`: processes of the job on this
  /// machine. `limits_usable`: the CPUs this process may use (CpuLimits::usable());
  /// `read_load`: the load (default: /proc/stat through CpuLoadProbe, the first reading since
  /// startup_load_probe() began). OMP_NUM_THREADS in the environment wins over auto, as a
  /// fixed count. Applies the count (set_threads).
  ThreadGovernor(int64_t threads, int64_t local_workers);
  ThreadGovernor(int64_t threads, int64_t local_workers, double limits_usable, LoadReader read_load,
                 std::chrono::duration<double> interval = std::chrono::seconds(2));

  /// The count in use (already applied with set_threads).
  int64_t threads() const { return threads_; }
  /// One line for the run's start: the count and why.
  const std::string& why() const { return why_; }
  /// Called once per optimizer step (cheap: a clock read). Every interval it reads the load:
  /// fewer threads as soon as others need CPUs, more once two readings in a row say they are
  /// free. Returns a line saying so when the count changed.
  std::optional<std::string> follow();

 private:
  int64_t target(double others) const;
  void apply(int64_t threads);
  bool adaptive_ = false;
  int64_t threads_ = 1;
  int64_t workers_ = 1;
  double usable_ = 1;
  LoadReader read_load_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point last_check_;
  int raise_votes_ = 0;
  std::string why_;
};

}  // namespace unitrain
