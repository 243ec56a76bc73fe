#include "unitrain/parallel/flight_recorder.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "unitrain/core/run_position.h"

namespace unitrain {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string CollectiveRecord::describe() const {
  if (seq < 0) return "no collective yet";
  std::string where = fmt::format("step {}", step);
  if (*phase) where += fmt::format(", {}", phase);
  if (bucket >= 0) where += fmt::format(", bucket {}", bucket);
  return fmt::format("{} #{} ({})", op, seq, where);
}

FlightRecorder::FlightRecorder(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

CollectiveRecord* FlightRecorder::slot_of(int64_t seq) {
  CollectiveRecord& r = ring_[static_cast<size_t>(seq) % ring_.size()];
  return r.seq == seq ? &r : nullptr;
}

int64_t FlightRecorder::begin(const char* op, int32_t tensors, int64_t bytes, int32_t bucket,
                              const char* phase) {
  const double now = unix_seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t seq = next_.load(std::memory_order_relaxed);
  CollectiveRecord& r = ring_[static_cast<size_t>(seq) % ring_.size()];
  if (r.in_flight()) open_.fetch_sub(1, std::memory_order_relaxed);  // overwritten unfinished
  r = CollectiveRecord{};
  r.seq = seq;
  r.op = op;
  r.tensors = tensors;
  r.bucket = bucket;
  r.bytes = bytes;
  const RunPosition* position = position_.load(std::memory_order_relaxed);
  r.step = position ? position->step() : 0;
  r.phase = phase ? phase : position ? position->phase() : "";
  r.start = now;
  next_.store(seq + 1, std::memory_order_relaxed);
  open_.fetch_add(1, std::memory_order_relaxed);
  return seq;
}

void FlightRecorder::end(int64_t seq) {
  const double now = unix_seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  CollectiveRecord* r = slot_of(seq);
  if (!r || !r->in_flight()) return;
  r->end = now;
  open_.fetch_sub(1, std::memory_order_relaxed);
}

void FlightRecorder::fail(int64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  CollectiveRecord* r = slot_of(seq);
  if (!r || !r->in_flight()) return;
  r->failed = true;
  open_.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<CollectiveRecord> FlightRecorder::recent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t next = next_.load(std::memory_order_relaxed);
  const int64_t first = std::max<int64_t>(0, next - static_cast<int64_t>(ring_.size()));
  std::vector<CollectiveRecord> out;
  for (int64_t s = first; s < next; ++s)
    out.push_back(ring_[static_cast<size_t>(s) % ring_.size()]);
  return out;
}

CollectiveRecord FlightRecorder::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t next = next_.load(std::memory_order_relaxed);
  if (next == 0) return {};
  return ring_[static_cast<size_t>(next - 1) % ring_.size()];
}

CollectiveRecord FlightRecorder::find(int64_t seq) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (seq < 0) return {};
  const CollectiveRecord& r = ring_[static_cast<size_t>(seq) % ring_.size()];
  return r.seq == seq ? r : CollectiveRecord{};
}

std::string FlightRecorder::to_json(int rank, const std::string& error,
                                    const std::vector<std::string>& peers) const {
  using nlohmann::json;
  json records = json::array();
  for (const CollectiveRecord& r : recent()) {
    json j = {{"seq", r.seq},   {"op", r.op},       {"tensors", r.tensors}, {"bytes", r.bytes},
              {"step", r.step}, {"phase", r.phase}, {"start", r.start},     {"failed", r.failed}};
    if (r.bucket >= 0) j["bucket"] = r.bucket;
    j["end"] = r.end < 0 ? json("in flight") : json(r.end);
    records.push_back(std::move(j));
  }
  json out = {{"rank", rank},           {"written", unix_seconds()},
              {"collectives", count()}, {"error", error},
              {"peers", peers},         {"records", std::move(records)}};
  if (const RunPosition* position = position_.load()) {
    out["step"] = position->step();
    out["phase"] = position->phase();
  }
  return out.dump(1);
}

bool FlightRecorder::write(const std::string& path, int rank, const std::string& error,
                           const std::vector<std::string>& peers) const {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream f(path, std::ios::trunc);
  f << to_json(rank, error, peers) << "\n";
  return static_cast<bool>(f);
}

}  // namespace unitrain
