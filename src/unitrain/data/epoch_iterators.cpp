#include "unitrain/data/epoch_iterators.h"

#include <omp.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "unitrain/core/error.h"

namespace unitrain::detail {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class SerialIterator : public EpochIterator {
 public:
  SerialIterator(EpochPlan plan, int64_t start) : plan_(std::move(plan)), next_(start) {}

  std::optional<Batch> next() override {
    if (failed_ || next_ >= plan_.num_batches) return std::nullopt;
    auto start = Clock::now();
    failed_ = true;  // until the read succeeds: the pass ends after a failure
    Batch batch = plan_.read(next_++);
    failed_ = false;
    wait_ += seconds_since(start);
    return batch;
  }
  double wait_seconds() const override { return wait_; }

 private:
  EpochPlan plan_;
  int64_t next_;
  bool failed_ = false;
  double wait_ = 0;
};

class ThreadedIterator : public EpochIterator {
 public:
  ThreadedIterator(EpochPlan plan, int64_t start, int64_t workers, int64_t prefetch)
      : plan_(std::move(plan)), start_(start), next_(start), capacity_(prefetch) {
    const int64_t remaining = plan_.num_batches - start_;
    const int64_t threads = std::max<int64_t>(1, std::min(workers, remaining));
    queues_ = std::vector<Queue>(static_cast<size_t>(threads));
    for (int64_t w = 0; w < threads; ++w) {
      threads_.emplace_back([this, w] { work(w); });
    }
  }

  ~ThreadedIterator() override {
    stop_ = true;
    for (auto& q : queues_) {
      std::lock_guard<std::mutex> lock(q.mu);
      q.not_full.notify_all();
    }
    for (auto& t : threads_) t.join();
  }

  std::optional<Batch> next() override {
    if (failed_ || next_ >= plan_.num_batches) return std::nullopt;
    Queue& q = queues_[static_cast<size_t>((next_ - start_) % queues_.size())];
    Item item;
    {
      std::unique_lock<std::mutex> lock(q.mu);
      if (q.items.empty()) {
        auto start = Clock::now();
        q.not_empty.wait(lock, [&] { return !q.items.empty(); });
        wait_ += seconds_since(start);
      }
      item = std::move(q.items.front());
      q.items.pop_front();
      q.not_full.notify_one();
    }
    ++next_;
    if (item.error) {
      failed_ = true;
      std::rethrow_exception(item.error);
    }
    return std::move(item.batch);
  }

  double wait_seconds() const override { return wait_; }

 private:
  struct Item {
    Batch batch;
    std::exception_ptr error;
  };
  struct Queue {
    std::mutex mu;
    std::condition_variable not_full, not_empty;
    std::deque<Item> items;
  };

  void work(int64_t w) {
    torch::NoGradGuard no_grad;
    // Reads run single-threaded: an OpenMP team per loader thread would oversubscribe the
    // cores the training step's own intra-op threads use.
    omp_set_num_threads(1);
    Queue& q = queues_[static_cast<size_t>(w)];
    const auto stride = static_cast<int64_t>(queues_.size());
    for (int64_t b = start_ + w; b < plan_.num_batches; b += stride) {
      {
        std::unique_lock<std::mutex> lock(q.mu);
        q.not_full.wait(lock,
                        [&] { return stop_ || static_cast<int64_t>(q.items.size()) < capacity_; });
        if (stop_) return;
      }
      Item item;
      try {
        item.batch = plan_.read(b);
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool failed = item.error != nullptr;
      {
        std::lock_guard<std::mutex> lock(q.mu);
        q.items.push_back(std::move(item));
        q.not_empty.notify_one();
      }
      if (failed || stop_) return;
    }
  }

  EpochPlan plan_;
  const int64_t start_;
  int64_t next_;
  const int64_t capacity_;
  std::vector<Queue> queues_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  bool failed_ = false;
  double wait_ = 0;
};

}  // namespace

Batch EpochPlan::read(int64_t b) const {
  const int64_t begin = b * batch_size;
  const int64_t end = std::min<int64_t>(begin + batch_size, order.size());
  const std::vector<int64_t> indices = order.slice(begin, end);
  auto where = [&] {
    return detail::concat(name, ": batch ", b, " (examples ", begin, "..", end - 1,
                          " of the epoch): ");
  };
  try {
    Batch batch = dataset->read_batch(indices, context);
    if (!pin_memory) return batch;
    Batch pinned;  // in the worker that read it: the training thread only launches the copy
    for (const auto& [key, tensor] : batch) pinned.set(key, tensor.pin_memory());
    return pinned;
  } catch (const ConfigError& e) {
    throw ConfigError(where() + e.what());
  } catch (const TrainError& e) {
    throw TrainError(where() + e.what());
  } catch (const c10::Error& e) {
    throw TrainError(where() + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw TrainError(where() + e.what());
  }
}

std::unique_ptr<EpochIterator> make_serial_iterator(EpochPlan plan, int64_t start_batch) {
  return std::make_unique<SerialIterator>(std::move(plan), start_batch);
}

std::unique_ptr<EpochIterator> make_threaded_iterator(EpochPlan plan, int64_t start_batch,
                                                      int64_t workers, int64_t prefetch) {
  return std::make_unique<ThreadedIterator>(std::move(plan), start_batch, workers, prefetch);
}

}  // namespace unitrain::detail
