#pragma once
// The two EpochIterator implementations behind Loader::epoch (internal to the data area).
#include <memory>
#include <string>
#include <vector>

#include "unitrain/data/loader.h"

namespace unitrain::detail {

/// What one epoch reads: batch b is order[b * batch_size, ...), num_batches in all.
struct EpochPlan {
  DatasetPtr dataset;
  EpochOrder order;
  int64_t batch_size = 0;
  int64_t num_batches = 0;
  std::string name;         ///< e.g. "data.train", for error messages
  ReadContext context;      ///< the seed and epoch, for per-example randomness
  bool pin_memory = false;  ///< batches in pinned host memory (LoaderOptions::pin_memory_ On)

  /// Reads batch b (pinned with pin_memory); a failure becomes a ConfigError/TrainError naming
  /// `name` and the batch.
  Batch read(int64_t b) const;
};

/// Reads each batch in the calling thread when next() asks for it (workers: 0).
std::unique_ptr<EpochIterator> make_serial_iterator(EpochPlan plan, int64_t start_batch);

/// `workers` threads; batch b (counted from start_batch) is read by worker b % workers, which
/// keeps up to `prefetch` batches ready. next() takes them round-robin, so the order is the
/// plan's whatever the number of workers. The destructor stops and joins the threads.
std::unique_ptr<EpochIterator> make_threaded_iterator(EpochPlan plan, int64_t start_batch,
                                                      int64_t workers, int64_t prefetch);

}  // namespace unitrain::detail
