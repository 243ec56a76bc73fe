#include "unitrain/profile/profiler.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "unitrain/profile/trace_recorder.h"

namespace unitrain {
namespace {

constexpr const char* kNames[kPhases] = {"data_wait",     "forward",    "backward",
                                         "gradient_sync", "clip",       "optimizer",
                                         "logging",       "validation", "checkpoint"};
// The trace's range names: unitrain/<phase>.
constexpr const char* kTraceNames[kPhases] = {
    "unitrain/data_wait",     "unitrain/forward",    "unitrain/backward",
    "unitrain/gradient_sync", "unitrain/clip",       "unitrain/optimizer",
    "unitrain/logging",       "unitrain/validation", "unitrain/checkpoint"};

double seconds_between(Profiler::Clock::time_point a, Profiler::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

const char* phase_name(Phase phase) { return kNames[static_cast<int>(phase)]; }

Profiler::Profiler(const ProfileOptions& options, int rank, bool cuda)
    : options_(options), rank_(rank), cuda_(cuda) {}

Profiler::~Profiler() = default;

Profiler::State Profiler::state_for(int64_t index) const {
  const int64_t cycle = options_.wait + options_.warmup + options_.active;
  if (options_.repeat > 0 && index >= cycle * options_.repeat) return State::Off;
  const int64_t pos = index % cycle;
  if (pos < options_.wait) return State::Wait;
  return pos < options_.wait + options_.warmup ? State::Warmup : State::Active;
}

void Profiler::begin_step(int64_t step) {
  if (step == step_) return;
  if (step_ >= 0) end_step();
  step_ = step;
  const State next = state_for(index_++);
  const bool traced = next == State::Warmup || next == State::Active;
  if (options_.trace) {
    // Warmup's events are dropped when the active steps begin, as PyTorch's schedule does.
    if (trace_ && trace_->running() && state_ == State::Warmup && next == State::Active) {
      trace_->stop(false);
    }
    if (traced && (!trace_ || !trace_->running())) {
      if (!trace_) trace_ = std::make_unique<TraceRecorder>(cuda_);
      trace_->start();
    }
  }
  state_ = next;
  step_start_ = Clock::now();
}

void Profiler::end_step() {
  if (state_ == State::Active) step_seconds_.push_back(seconds_between(step_start_, Clock::now()));
  // The last active step of a cycle ends the trace window.
  const State next = state_for(index_);
  if (trace_ && trace_->running() && state_ == State::Active && next != State::Active) {
    trace_->stop(true);
  }
}

void Profiler::enter(Phase phase) {
  const Clock::time_point now = Clock::now();
  // Time is the innermost phase's: an outer one pauses while a nested one runs.
  if (state_ == State::Active && !open_.empty()) {
    totals_[static_cast<size_t>(open_.back().phase)] += seconds_between(open_.back().start, now);
  }
  open_.push_back({phase, now});
  if (trace_ && trace_->running()) trace_->push(kTraceNames[static_cast<int>(phase)]);
}

void Profiler::leave() {
  if (open_.empty()) return;
  const Clock::time_point now = Clock::now();
  if (state_ == State::Active) {
    totals_[static_cast<size_t>(open_.back().phase)] += seconds_between(open_.back().start, now);
  }
  open_.pop_back();
  if (!open_.empty()) open_.back().start = now;
  if (trace_ && trace_->running()) trace_->pop();
}

double Profiler::step_seconds() const {
  return std::accumulate(step_seconds_.begin(), step_seconds_.end(), 0.0);
}

std::string profile_table(int64_t steps, const std::array<double, kPhases>& totals,
                          double step_seconds, bool traced) {
  std::string out = fmt::format("profile of {} step{}: {:.1f} ms per step{}\n", steps,
                                steps == 1 ? "" : "s", steps ? step_seconds * 1e3 / steps : 0.0,
                                traced ? " (with the operator trace on, whose recording slows "
                                         "small operators; profile.trace: false times the phases "
                                         "alone)"
                                       : "");
  out += fmt::format("  {:<14} {:>10} {:>12} {:>7}\n", "phase", "total s", "ms per step", "share");
  double in_phases = 0;
  auto row = [&](const char* name, double total) {
    out += fmt::format("  {:<14} {:>10.3f} {:>12.3f} {:>6.1f}%\n", name, total,
                       steps ? total * 1e3 / steps : 0.0,
                       step_seconds > 0 ? 100 * total / step_seconds : 0.0);
  };
  for (int p = 0; p < kPhases; ++p) {
    row(kNames[p], totals[static_cast<size_t>(p)]);
    in_phases += totals[static_cast<size_t>(p)];
  }
  row("other", std::max(0.0, step_seconds - in_phases));
  return out;
}

const ProfileResult& Profiler::finish(const std::string& device,
                                      std::optional<int64_t> peak_device_bytes) {
  const bool active = state_ == State::Active;
  if (step_ >= 0) end_step();
  // The run ended inside a window: an active one's events are kept, a warmup's dropped.
  if (trace_ && trace_->running()) trace_->stop(active);
  step_ = -1;
  state_ = State::Off;
  ProfileResult r;
  r.steps = steps();
  const double total = step_seconds();
  r.table = profile_table(r.steps, totals_, total, options_.trace);
  nlohmann::ordered_json j;
  j["steps"] = r.steps;
  j["rank"] = rank_;
  j["step_seconds"] = total;
  j["device"] = device;
  if (peak_device_bytes) {
    const int64_t mb = *peak_device_bytes / (1024 * 1024);
    j["peak_device_memory_mb"] = mb;
    r.table += fmt::format("peak {} memory {} MB (since the run's start)\n", device, mb);
  }
  j["schedule"] = {{"wait", options_.wait},
                   {"warmup", options_.warmup},
                   {"active", options_.active},
                   {"repeat", options_.repeat}};
  nlohmann::ordered_json& phases = j["phases"] = nlohmann::ordered_json::array();
  double in_phases = 0;
  auto add = [&](const char* name, double seconds) {
    phases.push_back({{"name", name},
                      {"total_seconds", seconds},
                      {"mean_ms", r.steps ? seconds * 1e3 / r.steps : 0.0},
                      {"share", total > 0 ? seconds / total : 0.0}});
  };
  for (int p = 0; p < kPhases; ++p) {
    add(kNames[p], totals_[static_cast<size_t>(p)]);
    in_phases += totals_[static_cast<size_t>(p)];
  }
  add("other", std::max(0.0, total - in_phases));
  r.summary_json = j.dump(1) + "\n";
  if (trace_) r.trace_json = trace_->json(rank_);
  result_ = std::move(r);
  return *result_;
}

}  // namespace unitrain
