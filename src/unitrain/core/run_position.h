#pragma once
// RunPosition: where the training thread is (the step it works on, the phase it is in) and when
// it last moved on, for the threads that watch it (the flight recorder, the stall watchdog).
#include <atomic>
#include <chrono>
#include <cstdint>

namespace unitrain {

/// The training thread's position, written by it and read by others without a lock. A phase is
/// a name with static storage ("data wait", "forward", "backward", ...); `step` is the
/// optimizer step being worked on (steps done + 1). Every enter() counts as progress.
class RunPosition {
 public:
  using Clock = std::chrono::steady_clock;

  void enter(const char* phase, int64_t step) {
    step_.store(step, std::memory_order_relaxed);
    enter(phase);
  }
  void enter(const char* phase) {
    phase_.store(phase, std::memory_order_relaxed);
    moved_.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }
  const char* phase() const { return phase_.load(std::memory_order_relaxed); }
  /// When enter() was last called (construction, before any).
  Clock::time_point moved() const {
    return Clock::time_point(Clock::duration(moved_.load(std::memory_order_acquire)));
  }

 private:
  std::atomic<int64_t> step_{0};
  std::atomic<const char*> phase_{"startup"};
  std::atomic<Clock::rep> moved_{Clock::now().time_since_epoch().count()};
};

}  // namespace unitrain
