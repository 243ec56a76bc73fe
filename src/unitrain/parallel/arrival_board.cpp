#include "unitrain/parallel/arrival_board.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <memory>
#include <sstream>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "unitrain/core/run_position.h"

namespace unitrain {

std::string RankNotice::encode() const {
  // Tab-separated: phases have spaces ("data wait"), none has a tab.
  return fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.3f}", beat, seq, op, step, phase,
                     bucket, in_flight ? 1 : 0, failed ? 1 : 0, position_step, position_phase,
                     published);
}

std::optional<RankNotice> RankNotice::decode(const std::string& text) {
  std::vector<std::string> f;
  std::stringstream in(text);
  for (std::string field; std::getline(in, field, '\t');) f.push_back(field);
  if (f.size() != 11) return std::nullopt;
  try {
    RankNotice n;
    n.beat = std::stoll(f[0]);
    n.seq = std::stoll(f[1]);
    n.op = f[2];
    n.step = std::stoll(f[3]);
    n.phase = f[4];
    n.bucket = std::stoi(f[5]);
    n.in_flight = f[6] == "1";
    n.failed = f[7] == "1";
    n.position_step = std::stoll(f[8]);
    n.position_phase = f[9];
    n.published = std::stod(f[10]);
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string RankNotice::collective() const {
  CollectiveRecord r;
  r.seq = seq;
  r.op = op.c_str();
  r.step = step;
  r.phase = phase.c_str();
  r.bucket = bucket;
  return r.describe();
}

namespace {

/// Where a rank was last seen: in its last collective; else where its training thread was.
std::string last_seen(const RankNotice& n) {
  if (n.seq >= 0) return "in " + n.collective();
  if (n.position_step > 0) {
    return fmt::format("at step {} ({}), before any collective of its own", n.position_step,
                       n.position_phase);
  }
  return "before any collective";
}

}  // namespace

void raise_to_completed(std::vector<std::optional<RankNotice>>& notices, int me,
                        const CollectiveRecord& done) {
  if (done.seq < 0 || done.end < 0 || done.failed) return;
  for (size_t r = 0; r < notices.size(); ++r) {
    auto& n = notices[r];
    if (int(r) == me || !n || n->failed || n->seq >= done.seq) continue;
    n->seq = done.seq;
    n->op = done.op;
    n->step = done.step;
    n->phase = done.phase;
    n->bucket = done.bucket;
    n->in_flight = false;
  }
}

std::vector<std::string> ranks_not_arrived(int64_t seq, int me,
                                           const std::vector<std::optional<RankNotice>>& first,
                                           const std::vector<std::optional<RankNotice>>& second,
                                           double now) {
  std::vector<std::string> lines, failed_earlier;
  for (size_t r = 0; r < second.size(); ++r) {
    if (static_cast<int>(r) == me) continue;
    const std::optional<RankNotice>& n = second[r];
    if (!n) {
      lines.push_back(fmt::format("rank {}: never published where it is (did it start?)", r));
      continue;
    }
    const bool alive = !first[r] || first[r]->beat != n->beat;
    if (n->failed && n->seq < seq) {
      failed_earlier.push_back(fmt::format("rank {}: failed earlier, in {}", r, n->collective()));
      continue;
    }
    if (n->failed || (alive && n->seq >= seq)) continue;  // arrived (and may have failed too)
    const double ago = now - n->published;
    const bool any = n->seq >= 0;
    if (!alive) {
      lines.push_back(
          fmt::format("rank {}: last seen {} {:.1f} s ago, no sign of life since "
                      "(stopped, ended, or unreachable)",
                      r, last_seen(*n), ago));
    } else {
      lines.push_back(
          fmt::format("rank {}: running, but not in this collective: at step {} "
                      "({}); {}",
                      r, n->position_step, n->position_phase,
                      any ? "its last collective " + n->collective() : "no collective yet"));
    }
  }
  // A rank whose own collective failed before was waiting for another: when a rank is named
  // above, that one is the cause and the failed rank a consequence, said after it.
  if (lines.empty()) return failed_earlier;
  for (const std::string& f : failed_earlier) {
    lines.push_back("(" + f.substr(0, f.find(':')) + " failed earlier, in" +
                    f.substr(f.find(", in") + 4) + ", waiting for it)");
  }
  return lines;
}

std::vector<std::string> ranks_silent_before(const std::vector<std::optional<RankNotice>>& read,
                                             int me, double now, double stale_after) {
  std::vector<std::string> lines;
  for (size_t r = 0; r < read.size(); ++r) {
    const std::optional<RankNotice>& n = read[r];
    if (static_cast<int>(r) == me || !n || n->failed) continue;
    const double ago = now - n->published;
    if (ago <= stale_after) continue;
    lines.push_back(
        fmt::format("rank {}: last seen {} {:.1f} s ago, no sign of life since (stopped, ended, or "
                    "unreachable)",
                    r, last_seen(*n), ago));
  }
  return lines;
}

ArrivalBoard::ArrivalBoard(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                           const FlightRecorder& recorder, std::chrono::milliseconds interval,
                           std::string store_host)
    : store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      recorder_(recorder),
      interval_(interval),
      store_host_(std::move(store_host)) {
  publish();  // every rank's key exists from the start
  thread_ = std::thread([this] { beat_until_stopped(); });
}

void ArrivalBoard::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::chrono::milliseconds ArrivalBoard::interval_for(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 20, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
}

std::string ArrivalBoard::key(int rank) const {
  return "unitrain-arrivals/rank-" + std::to_string(rank);
}

void ArrivalBoard::publish() {
  const CollectiveRecord latest = recorder_.latest();
  RankNotice n;
  n.seq = latest.seq;
  n.op = latest.op;
  n.step = latest.step;
  n.phase = latest.phase;
  n.bucket = latest.bucket;
  n.in_flight = latest.in_flight();
  n.failed = failed_.load();
  n.position_phase = "startup";
  if (const RunPosition* p = position_.load()) {
    n.position_step = p->step();
    n.position_phase = p->phase();
  }
  n.published = unix_seconds();
  n.beat = ++beat_;
  const std::string text = n.encode();
  try {
    store_->set(key(rank_), std::vector<uint8_t>(text.begin(), text.end()));
  } catch (const std::exception&) {  // the store is gone: the collectives will say so
  }
}

void ArrivalBoard::beat_until_stopped() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    publish();
    lock.lock();
  }
}

ArrivalBoard::Read ArrivalBoard::read_all() {
  Read out;
  out.notices.resize(static_cast<size_t>(world_size_));
  for (int r = 0; r < world_size_; ++r) {
    try {
      if (!store_->check({key(r)})) continue;  // never published
      const std::vector<uint8_t> v = store_->get(key(r));
      out.notices[static_cast<size_t>(r)] = RankNotice::decode(std::string(v.begin(), v.end()));
    } catch (const std::exception& e) {  // the store, not rank r: the rest cannot be read
      const std::string what = e.what();
      out.error = what.substr(0, what.find('\n'));
      break;
    }
  }
  return out;
}

ArrivalReport ArrivalBoard::compare(int64_t seq) {
  const std::string store = store_host_.empty()
                                ? "the rendezvous store"
                                : fmt::format("the rendezvous store (hosted by {})", store_host_);
  ArrivalReport report;
  publish();  // this rank's notice says it failed
  const Read first = read_all();
  if (!first.error.empty()) {
    report.store_note = fmt::format(
        "{} did not answer this rank's read of the ranks' notices ({}); no rank can be named",
        store, first.error);
    return report;
  }
  std::this_thread::sleep_for(2 * interval_ + std::chrono::milliseconds(100));
  Read second = read_all();
  const double now = unix_seconds();
  if (second.error.empty()) {
    // The newest collective before `seq` this rank completed: every rank was in it.
    for (int64_t k = seq - 1; k >= 0 && k >= seq - 16; --k) {
      const CollectiveRecord done = recorder_.find(k);
      if (done.seq == k && done.end >= 0 && !done.failed) {
        raise_to_completed(second.notices, rank_, done);
        break;
      }
    }
    report.missing = ranks_not_arrived(seq, rank_, first.notices, second.notices, now);
    return report;
  }
  // Gone between the reads: the first one alone tells which ranks had stopped beating (a
  // rank beats every interval; five missed beats, and at least 2 s, is silence).
  const double stale_after = std::max(5 * std::chrono::duration<double>(interval_).count(), 2.0);
  report.missing = ranks_silent_before(first.notices, rank_, now, stale_after);
  report.store_note =
      fmt::format("{} went away between this rank's two reads of the ranks' notices ({}); {}",
                  store, second.error,
                  report.missing.empty() ? "every other rank was beating at the first read"
                                         : "the ranks named had stopped beating before it went");
  return report;
}

ArrivalReport ArrivalBoard::report_failure(int64_t seq, std::chrono::milliseconds limit) {
  failed_ = true;
  // On a thread of its own: a TCPStore hosted by a stopped rank 0 never answers.
  auto reading = std::make_shared<std::packaged_task<ArrivalReport()>>(
      [self = shared_from_this(), this, seq] { return compare(seq); });
  std::future<ArrivalReport> report = reading->get_future();
  std::thread([reading] { (*reading)(); }).detach();
  if (report.wait_for(limit) == std::future_status::ready) return report.get();
  ArrivalReport none;
  none.missing.push_back(fmt::format(
      "the rendezvous store did not answer within {:.1f} s ({}: is {} stopped?)",
      std::chrono::duration<double>(limit).count(),
      store_host_.empty() ? "rank 0 hosts it unless a launcher does" : store_host_ + " hosts it",
      store_host_.empty() ? "rank 0" : store_host_));
  return none;
}

}  // namespace unitrain
