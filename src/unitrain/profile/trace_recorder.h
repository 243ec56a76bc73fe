#pragma once
// TraceRecorder: LibTorch's legacy autograd profiler around the profiled steps, and its events
// as a Chrome trace (chrome://tracing, Perfetto).
#include <memory>
#include <string>
#include <vector>

namespace unitrain {

/// Runs LibTorch's profiler between start() and stop(); phase ranges pushed with push()/pop()
/// become RecordFunction user scopes, so that the operators run inside a phase nest under it.
/// Events of the windows kept accumulate; json() gives them as one Chrome trace. With `cuda`
/// (a run on a GPU) the profiler also records a CUDA event at each operator's start and end:
/// each operator's time on the GPU becomes an event of its own, on a track per GPU.
class TraceRecorder {
 public:
  explicit TraceRecorder(bool cuda = false);
  ~TraceRecorder();
  void start();
  /// Ends the profiler; keeps its events when `keep` (an active window; not a warmup).
  void stop(bool keep);
  bool running() const { return running_; }
  void push(const char* name);
  void pop();
  /// The kept events as a Chrome trace's JSON text (ts and dur in microseconds, pid = `rank`).
  std::string json(int rank) const;
  size_t events() const { return events_.size(); }

 private:
  struct Scope;
  struct Origin;
  bool cuda_;
  bool running_ = false;
  std::vector<std::unique_ptr<Scope>> scopes_;
  /// The first event kept: every time is taken relative to it, in the profiler's integer
  /// nanoseconds (its absolute microseconds, as doubles, are only ~0.25 us precise, which
  /// could end an operator after the phase it ran in).
  std::unique_ptr<Origin> origin_;
  struct Event {
    std::string name;
    uint64_t tid;             ///< the host thread's, or for GPU time kGpuTrack + the GPU's index
    double start_us, dur_us;  ///< start relative to origin_
  };
  static constexpr uint64_t kGpuTrack = uint64_t{1} << 40;
  std::vector<Event> events_;
};

}  // namespace unitrain
