#pragma once
// PreemptionTicks: while one lives, a thread of its own on each of the given CPUs wakes every 500
// µs and sleeps again at once. It computes nothing and changes no number; it makes the kernel
// choose afresh, every 500 µs, which thread runs on that CPU.
//
// Why: a team of more threads than CPUs (TeamPlacement confines a run's team to the CPUs other
// programs leave free) takes turns on each CPU, and some of LibTorch's kernels make a thread
// spin, never sleep, until its partners arrive: oneDNN's convolution weight gradients reduce
// across threads behind a JIT-generated spin barrier. A spinning thread keeps its CPU until the
// scheduler's tick (4 ms at 250 Hz) hands it to the partner it waits for: the Fashion CNN with
// 2 threads on one CPU ran 1.3-1.4x slower than with 1 thread. A thread that wakes there is a
// point where the kernel preempts the spinner and then runs the thread that has had least
// CPU, the partner: the same CNN runs within 1.1x of 1 thread (docs/performance.md, "A busy
// machine").
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace unitrain {

class PreemptionTicks {
 public:
  /// A ticking thread on each CPU of `cpus` (sched_getaffinity's numbers).
  explicit PreemptionTicks(const std::vector<int>& cpus);
  /// Stops and joins them (within one period).
  ~PreemptionTicks();
  PreemptionTicks(const PreemptionTicks&) = delete;
  PreemptionTicks& operator=(const PreemptionTicks&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace unitrain
