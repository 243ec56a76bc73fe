#pragma once
// ArrivalBoard: each rank's latest collective and position, published to the store the group was
// made with, so that a rank whose collective times out can name the ranks that did not arrive.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "unitrain/parallel/c10d_fwd.h"
#include "unitrain/parallel/flight_recorder.h"

namespace unitrain {

class RunPosition;

/// What one rank last published: its latest collective, its position, a beat counter that
/// grows with every publication, and the publisher's clock.
struct RankNotice {
  int64_t beat = 0;
  int64_t seq = -1;  ///< its latest collective; -1: none yet
  std::string op;
  int64_t step = 0;
  std::string phase;
  int32_t bucket = -1;
  bool in_flight = false;
  bool failed = false;  ///< it reported a failed collective (and is leaving)
  int64_t position_step = 0;
  std::string position_phase;
  double published = 0;  ///< Unix time on the publisher's clock

  std::string encode() const;
  static std::optional<RankNotice> decode(const std::string& text);
  /// "all_reduce #412 (step 37, backward, bucket 3)".
  std::string collective() const;
};

/// Which ranks did not arrive at this rank's collective `seq`, from two reads of every rank's
/// notice taken some beats apart (`first`, `second`; nullopt: the rank never published). A rank
/// is named when it has not begun `seq`, or when its beat did not move between the reads (the
/// process is stopped or gone) and it did not report a failure of `seq` or later itself. One line
/// per rank named, e.g. "rank 2: last seen in all_reduce #412 (step 37, backward, bucket 3) 6.1 s
/// ago, no sign of life since". A rank that reported a failure of an earlier collective is named
/// as "rank 1: failed earlier, in ..." when no other rank is; else after them, as a consequence:
/// "(rank 1 failed earlier, in ..., waiting for it)". `now`: Unix time.
std::vector<std::string> ranks_not_arrived(int64_t seq, int me,
                                           const std::vector<std::optional<RankNotice>>& first,
                                           const std::vector<std::optional<RankNotice>>& second,
                                           double now);

/// Each notice of another rank (not `me`) older than `done` — a collective this rank completed,
/// so every rank took part in it — brought up to it: a notice is published on a beat and may
/// lag a collective or two behind where its rank was last seen.
void raise_to_completed(std::vector<std::optional<RankNotice>>& notices, int me,
                        const CollectiveRecord& done);

/// From one read of every rank's notice (the store went away before a second could be taken):
/// the ranks whose notice is older than `stale_after` seconds at `now` (their publisher stopped
/// beating before the store went), named as ranks_not_arrived() names a rank that shows no sign
/// of life. A rank that never published is not named: a read of one rank cannot tell that from
/// a store that went away.
std::vector<std::string> ranks_silent_before(const std::vector<std::optional<RankNotice>>& read,
                                             int me, double now, double stale_after);

/// What ArrivalBoard::report_failure() found: the ranks that did not arrive (one line each,
/// as ranks_not_arrived() writes them) and, when the store could not tell, why not.
struct ArrivalReport {
  std::vector<std::string> missing;
  /// Set when the store did not answer a read: e.g. "the rendezvous store (hosted by rank 0)
  /// went away between this rank's two reads of the notices (...)". A failed read is not
  /// evidence about any rank: `missing` then holds only the ranks whose notices had stopped
  /// in a read that did answer.
  std::string store_note;
};

/// Publishes this rank's notice every `interval` from a thread of its own (a store write of a
/// few dozen bytes), and reads everyone's when a collective fails. After report_failure() every
/// notice says so. Publishing stops when the board is destroyed. Held by shared_ptr: a read
/// that outlives report_failure()'s limit keeps the board alive.
class ArrivalBoard : public std::enable_shared_from_this<ArrivalBoard> {
 public:
  /// `store_host`: who hosts the store, for messages ("rank 0", "torchrun's agent"); "" when
  /// no process does (a FileStore, an in-memory store).
  ArrivalBoard(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
               const FlightRecorder& recorder, std::chrono::milliseconds interval,
               std::string store_host = "");
  ~ArrivalBoard() { stop(); }
  ArrivalBoard(const ArrivalBoard&) = delete;
  ArrivalBoard& operator=(const ArrivalBoard&) = delete;

  /// Stops publishing (joins the thread); after it the recorder may go.
  void stop();
  /// Notices say where `position` is (null: step 0, phase "startup").
  void follow(const RunPosition* position) { position_ = position; }
  /// The beat interval for a collective timeout: a twentieth of it, within [0.1 s, 1 s].
  static std::chrono::milliseconds interval_for(std::chrono::milliseconds timeout);

  /// After this rank's collective `seq` failed: publishes that, reads every rank's notice, waits
  /// two beats and reads them again; ranks_not_arrived() of the two. When the store fails the
  /// second read (its host ended), ranks_silent_before() of the first and a store_note saying
  /// so; when it fails the first, only the note. Gives up (and says so) after `limit` when the
  /// store does not answer at all (its host is the stopped rank).
  ArrivalReport report_failure(int64_t seq, std::chrono::milliseconds limit);
  /// How long a store's host waits after its own report before it may end, so that the
  /// others' two reads still find the store: three beats and a second.
  std::chrono::milliseconds linger() const { return 3 * interval_ + std::chrono::seconds(1); }

 private:
  /// One read of every rank's notice; `error` set (and the rest unread) when the store failed.
  struct Read {
    std::vector<std::optional<RankNotice>> notices;
    std::string error;
  };
  std::string key(int rank) const;
  void publish();
  Read read_all();
  ArrivalReport compare(int64_t seq);
  void beat_until_stopped();

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_size_;
  const FlightRecorder& recorder_;
  std::atomic<const RunPosition*> position_{nullptr};
  std::chrono::milliseconds interval_;
  std::string store_host_;
  std::atomic<int64_t> beat_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;  ///< stop_ (a publication runs outside it: a store may not answer)
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace unitrain
