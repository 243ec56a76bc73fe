#pragma once
// Loader: batches of a Dataset, read by N worker threads ahead of the step, in a fixed order.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/epoch_order.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

/// Whether collated batches are put in pinned (page-locked) host memory, from which a GPU copies
/// without blocking (`data.loader.pin_memory`).
enum class PinMemory { Auto, On, Off };

/// Loader settings (`data.loader`). Defaults on the fields; chained setters; each key declared
/// once in declare().
struct LoaderOptions {
  int64_t batch_size_ = 32;
  int64_t workers_ = -1;  ///< -1 = auto: 0 for in-memory datasets, else 2
  bool shuffle_ = true;
  bool drop_last_ = false;
  int64_t prefetch_ = 4;          ///< batches read ahead per worker
  int64_t bucket_window_ = 0;     ///< length bucketing: batches per sorted window; 0 = off
  std::string bucket_key_ = "x";  ///< the sequence whose length bucketing sorts by
  PinMemory pin_memory_ = PinMemory::Auto;  ///< Auto: resolved by for_device(); off until then

  LoaderOptions& batch_size(int64_t v) {
    batch_size_ = v;
    return *this;
  }
  LoaderOptions& workers(int64_t v) {
    workers_ = v;
    return *this;
  }
  LoaderOptions& shuffle(bool v) {
    shuffle_ = v;
    return *this;
  }
  LoaderOptions& drop_last(bool v) {
    drop_last_ = v;
    return *this;
  }
  LoaderOptions& prefetch(int64_t v) {
    prefetch_ = v;
    return *this;
  }
  LoaderOptions& bucket_window(int64_t v) {
    bucket_window_ = v;
    return *this;
  }
  LoaderOptions& bucket_key(std::string v) {
    bucket_key_ = std::move(v);
    return *this;
  }
  LoaderOptions& pin_memory(PinMemory v) {
    pin_memory_ = v;
    return *this;
  }
  /// The same options reading every example once, in order: what evaluation passes use.
  LoaderOptions in_order() const {
    LoaderOptions o = *this;
    return o.shuffle(false).drop_last(false).bucket_window(0);
  }

  /// ConfigError naming data.loader.pin_memory when it is `true` and the run's device is not a
  /// GPU (`gpu` false): pinned memory only serves copies to a GPU.
  void check_pin_memory(bool gpu) const;
  /// The same options for a run on a GPU (`gpu`) or not: pin_memory auto becomes on for a GPU,
  /// off otherwise; check_pin_memory(gpu) first.
  LoaderOptions for_device(bool gpu) const;

  static void declare(Options<LoaderOptions>& o);
  static LoaderOptions from_config(const Config& c) { return options_of<LoaderOptions>().parse(c); }
  static std::shared_ptr<const Schema> schema() { return options_of<LoaderOptions>().schema(); }
};

/// One pass over the data. next() returns batches in the epoch's order (which depends only on
/// the seed and the epoch, never on the number of workers) and nullopt at the end. Exceptions
/// thrown by a worker are re-thrown by next(). Destroying it stops the workers.
class EpochIterator {
 public:
  virtual ~EpochIterator() = default;
  virtual std::optional<Batch> next() = 0;
  /// Seconds next() spent waiting for a batch that was not ready yet.
  virtual double wait_seconds() const = 0;
};

/// Reads batches of `dataset`. The order of epoch e is a permutation seeded by (seed, e) when
/// shuffling, by `shuffle` (a run keeps the algorithm it started with: permutation.h), computed
/// per index: O(1) memory whatever the dataset's size. Batches of size batch_size; the last one
/// is shorter unless drop_last.
class Loader {
 public:
  /// ConfigError when the dataset is empty, or smaller than one batch with drop_last (naming
  /// `name`, e.g. "data.train", and both sizes).
  Loader(DatasetPtr dataset, LoaderOptions options, uint64_t seed, std::string name = "data",
         ShuffleAlgorithm shuffle = kCurrentShuffle);

  /// Reads only shard `rank` of `world` of every epoch (data-parallel training): positions
  /// rank, rank + world, ... of the epoch's order, so a step of `world` ranks with batch B reads
  /// what one process with batch world*B would. With `pad`, the order is first extended by its
  /// own beginning to a multiple of `world`, so every rank has as many examples and batches
  /// (a few examples are read twice per epoch, as with PyTorch's DistributedSampler); without
  /// it (validation) the shards are disjoint and together read every example once.
  /// ConfigError when a shard is smaller than one batch with drop_last.
  void shard(int rank, int world, bool pad);
  /// Reads shard `rank` of `world` by whole batches (distributed.reproducible): the epoch's
  /// order is cut into batches (which examples make up each does not depend on `world`), batch
  /// k read by rank k mod `world`. `whole` > 0 keeps only the first multiple of `whole`
  /// batches (training: whole optimizer steps of `whole` micro-shards; ConfigError naming
  /// data.loader.batch_size and `whole` when an epoch has not one); 0 reads every example once
  /// (validation). Also with `world` 1.
  void shard_batches(int rank, int world, int64_t whole);

  int64_t batches_per_epoch() const;
  /// The batches per epoch of the largest shard (rank 0's; without shards, batches_per_epoch()).
  int64_t most_batches_per_epoch() const;
  /// Examples in the whole dataset, and read per epoch (this rank's shard).
  int64_t dataset_size() const;
  int64_t epoch_size() const;
  /// Reader threads used: `workers`, or for auto 0 when the dataset is in memory, else 2.
  int64_t reader_threads() const;
  const LoaderOptions& options() const { return options_; }
  /// What it reads, for messages: "data.train", "data.val", ...
  const std::string& name() const { return name_; }
  /// The batches of `epoch`, starting at batch `start_batch` (a seek, not a replay).
  std::unique_ptr<EpochIterator> epoch(int64_t epoch, int64_t start_batch = 0) const;
  /// The example indices of `epoch` in the order they are read, computed per index. With
  /// bucket_window W > 0 the seeded order is cut into windows of W batches, each sorted by
  /// length (stable) and cut into batches whose order within the window is shuffled (seeded by
  /// seed, epoch and window): batches of similar lengths (little padding), still a function of
  /// seed and epoch; that order is held as a list.
  EpochOrder epoch_order(int64_t epoch) const;
  /// epoch_order(epoch) as a list (for tests and small data: 8 bytes an example).
  std::vector<int64_t> order(int64_t epoch) const { return epoch_order(epoch).to_vector(); }
  /// The algorithm of the shuffled orders (recorded in checkpoints).
  ShuffleAlgorithm shuffle_algorithm() const { return shuffle_; }

 private:
  DatasetPtr dataset_;
  LoaderOptions options_;
  uint64_t seed_;
  std::string name_;
  int rank_ = 0;
  int world_ = 1;
  bool pad_ = true;
  bool by_batches_ = false;  ///< shard_batches()
  int64_t whole_ = 0;        ///< shard_batches()' whole
  ShuffleAlgorithm shuffle_;
  /// This loader as shard `rank` of `world` (ConfigError naming it when there is no such shard).
  void place(int rank, int world);
  /// The positions of an epoch's order read at all: shard_batches()' whole steps, else all.
  int64_t read_limit() const;
  /// Sorts `order` by length within windows and shuffles the windows' batches (bucket_window).
  void bucket(std::vector<int64_t>& order, int64_t epoch) const;
  std::vector<int64_t> lengths_;  ///< bucketing: each example's length, read once
};

}  // namespace unitrain
