#include "unitrain/checkpoint/checkpointer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {
namespace {

double elapsed_seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// A delay before an async snapshot's copies, for tests: training must wait for them.
void maybe_delay_snapshot_for_tests() {
  static const long ms = [] {
    const char* v = std::getenv("UNITRAIN_TEST_SNAPSHOT_DELAY_MS");
    return v ? std::atol(v) : 0L;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

Checkpointer::Checkpointer(const CheckpointOptions& options, std::string root)
    : options_(options), store_(std::move(root)) {}

Checkpointer::~Checkpointer() {
  if (worker_.joinable()) worker_.join();
  if (failure_) {
    try {
      std::rethrow_exception(failure_);
    } catch (const std::exception& e) {
      spdlog::error("a background checkpoint save failed: {}", error_text(e));
    }
  }
}

void Checkpointer::clean_partial() {
  std::vector<std::string> in_use;
  if (int n = store_.remove_partial(&in_use); n > 0) {
    spdlog::warn("removed {} incomplete checkpoint folder(s) in {} left by an interrupted save", n,
                 store_.root());
  }
  for (const std::string& path : in_use) {
    spdlog::warn("left {}: the process writing it is still running", path);
  }
}

void Checkpointer::write(CheckpointSave& save) {
  auto start = std::chrono::steady_clock::now();
  // Serialise the snapshots. A synchronous save runs them side by side (training waits for
  // all of them anyway); an async one runs them one by one on this background thread, so it
  // takes at most one core from training.
  std::vector<std::future<void>> jobs;
  for (auto& file : save.files) {
    if (!file.produce) continue;
    jobs.push_back(std::async(options_.async ? std::launch::deferred : std::launch::async, [&file] {
      file.image = file.produce();
      file.produce = nullptr;  // the image holds what it needs of the snapshot
      if (!file.image.crc32) file.image.crc32 = crc32_of(file.image);
    }));
  }
  for (auto& job : jobs) job.get();
  const std::string dir = store_.save(save.step, save.files);
  store_.link("last", dir);
  if (save.best) store_.link("best", dir);
  store_.prune(options_.keep_last, store_.resolve_link("best"));
  write_seconds_ += elapsed_seconds(start);
}

void Checkpointer::wait() {
  if (worker_.joinable()) worker_.join();
  if (failure_) {
    std::exception_ptr failure = failure_;
    failure_ = nullptr;
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      throw TrainError(detail::concat("the background save of checkpoint step-", pending_step_,
                                      " failed: ", error_text(e),
                                      " (older checkpoints are intact)"));
    }
  }
}

void Checkpointer::save(CheckpointSave save) {
  auto start = std::chrono::steady_clock::now();
  wait();
  ++saves_;
  if (!options_.async) {
    if (save.snapshot) save.snapshot();
    write(save);
    blocking_seconds_ += elapsed_seconds(start);
    return;
  }
  pending_step_ = save.step;
  {
    std::lock_guard<std::mutex> lock(snapshot_mutex_);
    snapshot_pending_ = static_cast<bool>(save.snapshot);
  }
  worker_ = std::thread([this, s = std::move(save)]() mutable {
    try {
      run_snapshot(s);
      write(s);
    } catch (...) {
      failure_ = std::current_exception();
      snapshot_finished();  // a failed snapshot must not leave training waiting
    }
  });
  blocking_seconds_ += elapsed_seconds(start);
}

void Checkpointer::run_snapshot(CheckpointSave& save) {
  if (!save.snapshot) return;
  maybe_delay_snapshot_for_tests();
  save.snapshot();
  save.snapshot = nullptr;
  snapshot_finished();
}

void Checkpointer::snapshot_finished() {
  {
    std::lock_guard<std::mutex> lock(snapshot_mutex_);
    snapshot_pending_ = false;
  }
  snapshot_done_.notify_all();
}

void Checkpointer::wait_snapshot() {
  std::unique_lock<std::mutex> lock(snapshot_mutex_);
  if (!snapshot_pending_) return;
  auto start = std::chrono::steady_clock::now();
  snapshot_done_.wait(lock, [this] { return !snapshot_pending_; });
  snapshot_wait_seconds_ += elapsed_seconds(start);
}

std::string Checkpointer::find_resume(const std::string& resume,
                                      std::vector<std::string>* skipped) const {
  if (resume == "none") return "";
  if (resume == "auto") {
    std::vector<CheckpointRef> all = store_.step_folders();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      std::string problem = CheckpointStore::verify(it->dir);
      if (problem.empty()) return it->dir;
      std::string why = fmt::format(
          "skipping checkpoint {}: it is damaged ({}); resuming from an older one, if any", it->dir,
          problem);
      if (skipped) {
        skipped->push_back(std::move(why));
      } else {
        spdlog::warn("{}", why);
      }
    }
    return "";
  }
  std::string dir = resume;
  if (resume == "last" || resume == "best") {
    dir = store_.resolve_link(resume);
    UT_CHECK(!dir.empty(), "checkpoint.resume: ", resume, ": there is no '", resume,
             "' checkpoint in ", store_.root(),
             resume == "best" ? " (is checkpoint.best.metric set?)" : "");
  }
  std::string problem = CheckpointStore::verify(dir);
  UT_CHECK(problem.empty(), "checkpoint.resume: ", problem);
  return dir;
}

}  // namespace unitrain
