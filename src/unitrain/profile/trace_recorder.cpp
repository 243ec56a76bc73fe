#include "unitrain/profile/trace_recorder.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace unitrain {
namespace legacy = torch::autograd::profiler;

struct TraceRecorder::Scope {
  at::RecordFunction record{at::RecordScope::USER_SCOPE};
};

struct TraceRecorder::Origin {
  legacy::LegacyEvent event;
};

TraceRecorder::TraceRecorder(bool cuda) : cuda_(cuda) {}

TraceRecorder::~TraceRecorder() {
  if (running_) stop(false);
}

void TraceRecorder::start() {
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  legacy::enableProfilerLegacy(ProfilerConfig(cuda_ ? ProfilerState::CUDA : ProfilerState::CPU));
  running_ = true;
}

void TraceRecorder::stop(bool keep) {
  scopes_.clear();  // ranges still open end here
  const legacy::thread_event_lists lists = legacy::disableProfilerLegacy();
  running_ = false;
  if (!keep) return;
  // With CUDA events, the profiler's first event on each GPU: GPU times are read from it.
  std::map<int, const legacy::LegacyEvent*> gpu_start;
  for (const auto& list : lists) {
    for (const auto& e : list) {
      if (e.kindStr() == "mark" && std::string(e.name()) == "__cuda_start_event" && e.hasCuda()) {
        gpu_start.emplace(e.device(), &e);
      }
    }
  }
  // Each push has its pop with the same handle (on the same thread); marks are skipped.
  for (const auto& list : lists) {
    std::map<at::RecordFunctionHandle, const legacy::LegacyEvent*> open;
    for (const auto& e : list) {
      if (e.kindStr() == "push") {
        open[e.handle()] = &e;
      } else if (e.kindStr() == "pop") {
        auto it = open.find(e.handle());
        if (it == open.end()) continue;
        const legacy::LegacyEvent& s = *it->second;
        if (!origin_) origin_ = std::make_unique<Origin>(Origin{s});
        events_.push_back(
            {s.name(), s.threadId(), origin_->event.cpuElapsedUs(s), s.cpuElapsedUs(e)});
        const auto gpu = s.hasCuda() ? gpu_start.find(s.device()) : gpu_start.end();
        if (gpu != gpu_start.end()) {  // the GPU's start event is at a known host time
          const legacy::LegacyEvent& g = *gpu->second;
          events_.push_back({s.name(), kGpuTrack + static_cast<uint64_t>(s.device()),
                             origin_->event.cpuElapsedUs(g) + g.cudaElapsedUs(s),
                             s.cudaElapsedUs(e)});
        }
        open.erase(it);
      }
    }
  }
}

void TraceRecorder::push(const char* name) {
  auto scope = std::make_unique<Scope>();
  if (scope->record.isActive()) scope->record.before(name);
  scopes_.push_back(std::move(scope));
}

void TraceRecorder::pop() {
  if (!scopes_.empty()) scopes_.pop_back();
}

std::string TraceRecorder::json(int rank) const {
  double origin = 0;
  if (!events_.empty()) {
    origin = std::min_element(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
               return a.start_us < b.start_us;
             })->start_us;
  }
  nlohmann::json out;
  out["displayTimeUnit"] = "ms";
  nlohmann::json& list = out["traceEvents"] = nlohmann::json::array();
  list.push_back({{"name", "process_name"},
                  {"ph", "M"},
                  {"pid", rank},
                  {"args", {{"name", "rank " + std::to_string(rank)}}}});
  std::set<uint64_t> gpu_tracks;
  for (const Event& e : events_) {
    const bool phase = e.name.rfind("unitrain/", 0) == 0;
    const bool gpu = e.tid >= kGpuTrack;
    if (gpu) gpu_tracks.insert(e.tid);
    const char* category = gpu ? "cuda" : (phase ? "phase" : "operator");
    list.push_back({{"name", e.name},
                    {"cat", category},
                    {"ph", "X"},
                    {"ts", e.start_us - origin},
                    {"dur", e.dur_us},
                    {"pid", rank},
                    {"tid", e.tid}});
  }
  for (uint64_t tid : gpu_tracks) {  // a GPU track's name
    const std::string name =
        "cuda:" + std::to_string(tid - kGpuTrack) + " (GPU time of each operator and phase)";
    list.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"tid", tid},
                    {"args", {{"name", name}}}});
  }
  return out.dump() + "\n";
}

}  // namespace unitrain
