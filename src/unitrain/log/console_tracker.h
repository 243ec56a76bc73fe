#pragma once
// ConsoleTracker: one plain line per log event, or a live progress bar on a terminal.
#include <chrono>
#include <cstdint>
#include <memory>

#include "unitrain/log/tracker.h"

namespace unitrain {

/// Registers `console` (called by register_builtin_trackers()).
void register_console_tracker();

/// Prints log events. With `progress_bar`, also keeps one self-updating line showing steps
/// done, rate, ETA and the running loss (redrawn at most 10 times a second); event lines
/// are printed above it.
class ConsoleTracker : public Tracker {
 public:
  explicit ConsoleTracker(bool progress_bar);
  ~ConsoleTracker() override;
  void log(const LogEvent& event) override;
  void progress(int64_t step, int64_t total_steps, int64_t epoch, const LossReader& loss) override;
  /// Clears the progress bar.
  void finish(const RunEnd& end) override { end_bar(); }

 private:
  void end_bar();
  bool bar_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t start_step_ = -1;
};

/// Formats metric values compactly (4 significant decimals; scientific for small values).
std::string format_metric(double v);

}  // namespace unitrain
