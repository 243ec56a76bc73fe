#include "unitrain/log/console_tracker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "unitrain/log/console.h"
#include "unitrain/log/log_options.h"

namespace unitrain {
namespace {

bool g_bar_visible = false;

void clear_bar() {
  if (g_bar_visible) {
    std::fputs("\r\033[2K", stderr);
    std::fflush(stderr);
    g_bar_visible = false;
  }
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

}  // namespace

std::string format_metric(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  double a = std::fabs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e6)) return fmt::format("{:.3e}", v);
  return fmt::format("{:.4f}", v);
}

ConsoleTracker::ConsoleTracker(bool progress_bar)
    : bar_(progress_bar), start_(std::chrono::steady_clock::now()) {
  if (bar_) log::set_before_print(&clear_bar);
}

ConsoleTracker::~ConsoleTracker() { end_bar(); }

void ConsoleTracker::log(const LogEvent& e) {
  std::string line = fmt::format("step {} | epoch {} | samples {}", e.step, e.epoch, e.samples);
  for (const auto& [k, v] : e.metrics) line += fmt::format(" | {} {}", k, format_metric(v));
  log::info(line);
}

void ConsoleTracker::progress(int64_t step, int64_t total_steps, int64_t epoch,
                              const LossReader& loss) {
  if (!bar_) return;
  auto now = std::chrono::steady_clock::now();
  if (start_step_ < 0) {
    start_step_ = step - 1;
    start_ = now;
  }
  bool last = total_steps > 0 && step >= total_steps;
  if (drawn_ && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double rate = elapsed > 0 ? (step - start_step_) / elapsed : 0;
  std::string bar;
  if (total_steps > 0) {
    const int width = 24;
    int filled = static_cast<int>(width * std::min<double>(1.0, double(step) / total_steps));
    bar = "[" + std::string(filled, '=') + (filled < width ? ">" : "") +
          std::string(std::max(0, width - filled - 1), ' ') + "] ";
  }
  double eta = (total_steps > 0 && rate > 0) ? (total_steps - step) / rate : NAN;
  std::string text = fmt::format("\r\033[2Kepoch {} {}{}/{} {:.1f} it/s ETA {} loss {}", epoch, bar,
                                 step, total_steps > 0 ? std::to_string(total_steps) : "?", rate,
                                 format_duration(eta), format_metric(loss()));
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  g_bar_visible = true;
}

void ConsoleTracker::end_bar() {
  if (bar_) {
    clear_bar();
    log::set_before_print(nullptr);
    bar_ = false;
  }
}

void register_console_tracker() {
  tracker_registry().add(
      "console",
      "one line per log event on the console (and train.log); with log.progress_bar, "
      "a live progress bar",
      Schema(), [](const Config&, const LogOptions& o) -> TrackerPtr {
        const bool bar =
            o.progress_bar == "true" || (o.progress_bar == "auto" && isatty(STDERR_FILENO));
        return std::make_unique<ConsoleTracker>(bar);
      });
}

}  // namespace unitrain
