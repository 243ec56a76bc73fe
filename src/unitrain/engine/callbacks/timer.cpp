#include "unitrain/engine/callbacks/timer.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/engine/callback_registry.h"
#include "unitrain/engine/trainer.h"

namespace unitrain {
namespace {

[[noreturn]] void bad_budget(const std::string& key, const std::string& text) {
  throw ConfigError(
      fmt::format("{}: '{}' is not a wall-clock budget; give e.g. 3h50m, 90m, 45s "
                  "or 03:50:00 (HH:MM:SS)",
                  key, text));
}

// "1:02:30:00", "02:30:00", "30:00": colon-separated fields, the last being seconds.
double parse_clock(const std::string& text, const std::string& key) {
  std::vector<double> fields;
  std::string field;
  for (char c : text + ":") {
    if (c != ':') {
      if (!std::isdigit(static_cast<unsigned char>(c))) bad_budget(key, text);
      field += c;
      continue;
    }
    if (field.empty()) bad_budget(key, text);
    fields.push_back(std::stod(field));
    field.clear();
  }
  if (fields.size() < 2 || fields.size() > 4) bad_budget(key, text);
  static const double kUnit[] = {1, 60, 3600, 86400};
  double seconds = 0;
  for (size_t i = 0; i < fields.size(); ++i) seconds += fields[fields.size() - 1 - i] * kUnit[i];
  return seconds;
}

/// "1 s", "1.5 s" (seconds as `seconds_format` gives them), "12 min 30 s", "3 h 50 min".
std::string duration_text(double seconds, const char* seconds_format) {
  if (seconds < 59.95) return fmt::format(fmt::runtime(seconds_format), seconds) + " s";
  const auto whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 3600) {
    return whole % 60 ? fmt::format("{} min {} s", whole / 60, whole % 60)
                      : fmt::format("{} min", whole / 60);
  }
  const int64_t minutes = (whole % 3600) / 60;
  return minutes ? fmt::format("{} h {} min", whole / 3600, minutes)
                 : fmt::format("{} h", whole / 3600);
}

}  // namespace

std::string budget_spent_text(double budget_seconds, double spent_seconds) {
  return fmt::format("timer: the time budget of {} is spent (after {})",
                     duration_text(budget_seconds, "{:g}"), duration_text(spent_seconds, "{:.1f}"));
}

double parse_wall_clock(const std::string& text, const std::string& key) {
  if (text.find(':') != std::string::npos) return parse_clock(text, key);
  double seconds = 0;
  std::string number;
  bool any = false;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      number += c;
      continue;
    }
    const double unit = c == 'd' ? 86400 : c == 'h' ? 3600 : c == 'm' ? 60 : c == 's' ? 1 : 0;
    if (unit == 0 || number.empty() || number == ".") bad_budget(key, text);
    seconds += std::stod(number) * unit;
    number.clear();
    any = true;
  }
  if (!number.empty() || !any) bad_budget(key, text);
  return seconds;
}

void TimerOptions::declare(Options<TimerOptions>& o) {
  o.field("budget", &TimerOptions::budget)
      .required()
      .help(
          "wall-clock time to train for, from the start of this process's fit(): 3h50m, 90m, "
          "45s or 03:50:00");
  o.field("pause", &TimerOptions::pause)
      .help(
          "true: end resumable (exit checkpoint.on_signal.exit_code, 75: run the same command "
          "again to continue); false: end the run");
}

Timer::Timer(TimerOptions options)
    : options_(std::move(options)),
      budget_seconds_(parse_wall_clock(options_.budget, "timer.budget")) {
  UT_CHECK(budget_seconds_ > 0, "timer.budget: '", options_.budget, "' must be more than 0 s");
}

void Timer::on_fit_start(Trainer&) {
  start_ = Clock::now();
  fired_ = false;
}

void Timer::on_step_end(Trainer& trainer, const MetricMap&) { check(trainer); }

void Timer::on_epoch_end(Trainer& trainer) { check(trainer); }

void Timer::check(Trainer& trainer) {
  const double spent = std::chrono::duration<double>(Clock::now() - start_).count();
  if (fired_ || spent < budget_seconds_) return;
  fired_ = true;
  const std::string why = budget_spent_text(budget_seconds_, spent);
  if (options_.pause) {
    trainer.request_pause(why);
  } else {
    trainer.print(why + "; stopping");
    trainer.request_stop();
  }
}

void register_timer_callback() {
  register_callback<Timer, TimerOptions>(
      "timer", "pause (or stop) with a checkpoint after a wall-clock budget");
}

}  // namespace unitrain
