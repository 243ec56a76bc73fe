#pragma once
// FlightRecorder: the last collectives of one rank, in a ring of fixed size, for the report a
// hang or a failed collective leaves behind (run_dir/logs/flight-rank-N.json).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace unitrain {

class RunPosition;

/// One collective as the recorder saw it. `op` and `phase` are names with static storage.
struct CollectiveRecord {
  int64_t seq = -1;        ///< this rank's collectives, counted from 0; -1: no record
  const char* op = "";     ///< all_reduce, broadcast, reduce, all_gather, all_to_all, barrier
  int32_t tensors = 0;     ///< tensors in the call
  int32_t bucket = -1;     ///< the gradient bucket it reduces; -1: none
  int64_t bytes = 0;       ///< of the tensors
  int64_t step = 0;        ///< the optimizer step being worked on (RunPosition)
  const char* phase = "";  ///< the training phase it was launched in (RunPosition)
  double start = 0;        ///< Unix time, seconds
  double end = -1;         ///< Unix time, seconds; < 0: in flight (or failed)
  bool failed = false;     ///< it ended with an error (a timeout, a peer gone)

  bool in_flight() const { return seq >= 0 && end < 0 && !failed; }
  /// e.g. "all_reduce #412 (step 37, backward, bucket 3)".
  std::string describe() const;
};

/// The ring: begin() takes the next sequence number and overwrites the oldest record; end() and
/// fail() close a record while it is still in the ring. No allocation after construction; one
/// uncontended lock per call (collectives are launched from the training thread and autograd's,
/// the report is read from a watchdog thread).
class FlightRecorder {
 public:
  /// 256 records of 72 bytes: every bucket of a step of a model with 6 GB of gradients.
  explicit FlightRecorder(size_t capacity = 256);

  /// Records take their step and phase from `position` (null: step 0, phase "").
  void follow(const RunPosition* position) { position_.store(position); }
  /// A collective launched now; its sequence number. `phase` null: the position's.
  int64_t begin(const char* op, int32_t tensors, int64_t bytes, int32_t bucket = -1,
                const char* phase = nullptr);
  void end(int64_t seq);
  void fail(int64_t seq);

  /// The records in the ring, oldest first.
  std::vector<CollectiveRecord> recent() const;
  /// The last collective begun (seq -1 before the first).
  CollectiveRecord latest() const;
  /// The record of `seq` while it is in the ring (seq -1 once overwritten).
  CollectiveRecord find(int64_t seq) const;
  /// Collectives begun so far.
  int64_t count() const { return next_.load(std::memory_order_relaxed); }
  /// Collectives begun and not yet ended or failed.
  int64_t open() const { return open_.load(std::memory_order_relaxed); }
  size_t capacity() const { return ring_.size(); }

  /// The report as JSON: rank, the time it was written, the position, `error` (may be empty),
  /// `peers` (lines about the other ranks, may be empty) and the records, oldest first.
  std::string to_json(int rank, const std::string& error,
                      const std::vector<std::string>& peers) const;
  /// to_json() into `path` (its folder made); false (and nothing thrown) when it cannot be
  /// written: the report is written on the way out of a failing run.
  bool write(const std::string& path, int rank, const std::string& error,
             const std::vector<std::string>& peers) const;

 private:
  CollectiveRecord* slot_of(int64_t seq);
  mutable std::mutex mutex_;
  std::vector<CollectiveRecord> ring_;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> open_{0};
  std::atomic<const RunPosition*> position_{nullptr};
};

/// Unix time now, in seconds.
double unix_seconds();

}  // namespace unitrain
