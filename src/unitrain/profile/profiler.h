#pragma once
// Profiler: where an optimizer step's time goes, phase by phase, for the steps a schedule picks;
// with a Chrome trace of LibTorch's operators under the phases.
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/profile/profile_options.h"

namespace unitrain {

/// The parts of a step the loop marks. Names in the table and files: data_wait, forward,
/// backward, gradient_sync, clip, optimizer, logging, validation, checkpoint.
enum class Phase {
  DataWait,
  Forward,
  Backward,
  GradientSync,
  Clip,
  Optimizer,
  Logging,
  Validation,
  Checkpoint
};
constexpr int kPhases = 9;
const char* phase_name(Phase phase);

class TraceRecorder;

/// What a profile leaves: the table for the log, and the texts of run_dir/profile's files.
struct ProfileResult {
  int64_t steps = 0;         ///< active steps recorded
  std::string table;         ///< per phase: total, mean per step, share
  std::string summary_json;  ///< profile/summary.json (docs/report.md)
  std::string trace_json;    ///< a Chrome trace ("" when ProfileOptions::trace is off)
};

/// Times the phases of the steps ProfileOptions' schedule records. The loop calls begin_step()
/// when an optimizer step begins (before the fetch of its first micro-batch), marks phases with
/// Range, and calls end_step() when the step (with its logging, validation and save) is over.
/// During warmup and active steps LibTorch's profiler runs (operators under the phases, for the
/// trace); the table counts active steps only. Off (a null Profiler*), a Range costs a branch.
class Profiler {
 public:
  using Clock = std::chrono::steady_clock;
  /// `cuda`: the run trains on a GPU; the trace then holds each operator's GPU time too.
  Profiler(const ProfileOptions& options, int rank, bool cuda = false);
  ~Profiler();

  /// Optimizer step `step` begins (again calls for the same step do nothing); the one before,
  /// if any, ends: a step's time runs from its begin to the next one's (or finish()).
  void begin_step(int64_t step);
  /// This step is active: its phases are counted.
  bool recording() const { return state_ == State::Active; }

  /// Marks a phase for its lifetime.
  class Range {
   public:
    Range(Profiler* profiler, Phase phase) : profiler_(profiler) {
      if (profiler_) profiler_->enter(phase);
    }
    ~Range() {
      if (profiler_) profiler_->leave();
    }
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;

   private:
    Profiler* profiler_;
  };

  /// Stops LibTorch's profiler if it runs; the table, summary and trace of the steps recorded.
  /// The summary names the run's `device` and, when given, its peak memory in bytes since the
  /// run's start (`peak_device_bytes`: a GPU's caching allocator), which the table's last line
  /// says too.
  const ProfileResult& finish(const std::string& device = "cpu",
                              std::optional<int64_t> peak_device_bytes = std::nullopt);
  /// finish()'s result (null before it).
  const ProfileResult* result() const { return result_ ? &*result_ : nullptr; }

  /// Totals over the recorded steps (for tests and the table).
  int64_t steps() const { return static_cast<int64_t>(step_seconds_.size()); }
  double phase_seconds(Phase p) const { return totals_[static_cast<size_t>(p)]; }
  double step_seconds() const;

 private:
  enum class State { Off, Wait, Warmup, Active };
  State state_for(int64_t index) const;
  void enter(Phase phase);
  void leave();
  void end_step();

  ProfileOptions options_;
  int rank_;
  bool cuda_;
  int64_t index_ = 0;  ///< steps begun so far
  int64_t step_ = -1;  ///< the step begun last
  State state_ = State::Off;
  Clock::time_point step_start_;
  struct Open {
    Phase phase;
    Clock::time_point start;
  };
  std::vector<Open> open_;  ///< phases entered and not left (innermost last)
  std::array<double, kPhases> totals_{};
  std::vector<double> step_seconds_;
  std::unique_ptr<TraceRecorder> trace_;  ///< LibTorch's profiler, while it runs
  std::optional<ProfileResult> result_;   ///< finish()'s
};

/// The table of a summary: each phase's total, mean per step and share of the step time, and
/// "other" (step time outside any phase); `traced` notes the operator trace's overhead.
std::string profile_table(int64_t steps, const std::array<double, kPhases>& totals,
                          double step_seconds, bool traced);

}  // namespace unitrain
