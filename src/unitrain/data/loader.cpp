#include "unitrain/data/loader.h"

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/data/epoch_iterators.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

void LoaderOptions::declare(Options<LoaderOptions>& o) {
  using T = LoaderOptions;
  const char* batches = "the position in the epoch refers to those batches";
  o.field("batch_size", &T::batch_size_)
      .gt(0)
      .fixed(batches)
      .help("examples per batch (per process)");
  o.field("workers", &T::workers_)
      .or_auto()
      .min(0)
      .harmless()
      .help(
          "reader threads; 0 = read in the training thread; auto = 0 for in-memory datasets (all "
          "built-ins), else 2");
  o.field("shuffle", &T::shuffle_)
      .fixed(batches)
      .help("a new seeded order every epoch (train only)");
  o.field("drop_last", &T::drop_last_).fixed(batches).help("drop the last batch when it is short");
  o.field("prefetch", &T::prefetch_).gt(0).harmless().help("batches each worker reads ahead");
  o.field("bucket_window", &T::bucket_window_)
      .min(0)
      .fixed(batches)
      .help(
          "length bucketing (train): the shuffled order sorted by length within windows of this "
          "many batches, whose order is then shuffled; 0 = off. Pair with data.collate: pad");
  o.field("bucket_key", &T::bucket_key_)
      .fixed(batches)
      .help("the sequence whose length (first dimension) bucketing sorts by");
  o.field("pin_memory", &T::pin_memory_,
          {{"auto", PinMemory::Auto}, {"true", PinMemory::On}, {"false", PinMemory::Off}})
      .harmless()
      .help(
          "collate batches into pinned host memory, which a GPU copies from without blocking the "
          "training thread; auto = on when train.device is a GPU; true needs a GPU");
}

void LoaderOptions::check_pin_memory(bool gpu) const {
  UT_CHECK(gpu || pin_memory_ != PinMemory::On,
           "data.loader.pin_memory: true pins batches for copies to a GPU, but the run's device "
           "(train.device) is the CPU; use auto or false");
}

LoaderOptions LoaderOptions::for_device(bool gpu) const {
  check_pin_memory(gpu);
  LoaderOptions o = *this;
  if (o.pin_memory_ == PinMemory::Auto) o.pin_memory_ = gpu ? PinMemory::On : PinMemory::Off;
  return o;
}

Loader::Loader(DatasetPtr dataset, LoaderOptions options, uint64_t seed, std::string name,
               ShuffleAlgorithm shuffle)
    : dataset_(std::move(dataset)),
      options_(options),
      seed_(seed),
      name_(std::move(name)),
      shuffle_(shuffle) {
  UT_CHECK(options_.batch_size_ > 0, "data.loader.batch_size must be > 0, got ",
           options_.batch_size_);
  UT_CHECK(options_.workers_ >= -1, "data.loader.workers must be >= 0, got ", options_.workers_);
  UT_CHECK(options_.prefetch_ > 0, "data.loader.prefetch must be > 0, got ", options_.prefetch_);
  UT_CHECK(dataset_ != nullptr, name_, ": no dataset given to the loader");
  const int64_t n = dataset_->size();
  UT_CHECK(n > 0, name_, " is empty (0 examples)");
  UT_CHECK(!options_.drop_last_ || n >= options_.batch_size_, name_, " has ", n,
           " examples, fewer than one batch (data.loader.batch_size = ", options_.batch_size_,
           ") with data.loader.drop_last: true; lower the batch size or set drop_last: false");
  UT_CHECK(options_.bucket_window_ >= 0, "data.loader.bucket_window must be >= 0, got ",
           options_.bucket_window_);
  if (options_.bucket_window_ > 0) {  // one pass over the examples for their lengths
    lengths_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const Batch e = dataset_->get(i);
      UT_CHECK(e.has(options_.bucket_key_) && e.at(options_.bucket_key_).dim() >= 1, name_,
               ": data.loader.bucket_key '", options_.bucket_key_,
               "' must name a sequence of the examples (example ", i, ")");
      lengths_[static_cast<size_t>(i)] = e.at(options_.bucket_key_).size(0);
    }
  }
}

int64_t Loader::dataset_size() const { return dataset_->size(); }

int64_t Loader::epoch_size() const {
  const int64_t n = dataset_->size();
  if (by_batches_) {
    return EpochOrder::size_in_blocks(read_limit(), options_.batch_size_, rank_, world_);
  }
  if (world_ == 1) return n;
  return pad_ ? (n + world_ - 1) / world_ : (n - rank_ + world_ - 1) / world_;
}

void Loader::place(int rank, int world) {
  UT_CHECK(world >= 1 && rank >= 0 && rank < world, name_, ": shard ", rank, " of ", world,
           " does not exist");
  rank_ = rank;
  world_ = world;
}

void Loader::shard(int rank, int world, bool pad) {
  place(rank, world);
  pad_ = pad;
  UT_CHECK(!options_.drop_last_ || epoch_size() >= options_.batch_size_, name_, " has ",
           dataset_->size(), " examples, ", epoch_size(), " per process of ", world,
           ": fewer than one batch (data.loader.batch_size = ", options_.batch_size_,
           ") with data.loader.drop_last: true");
}

void Loader::shard_batches(int rank, int world, int64_t whole) {
  place(rank, world);
  pad_ = false;
  by_batches_ = true;
  whole_ = whole;
  const int64_t step = whole * options_.batch_size_;
  UT_CHECK(whole == 0 || dataset_->size() >= step, name_, " has ", dataset_->size(),
           " examples: fewer than one step of distributed.reproducible's ", whole,
           " micro-shards x data.loader.batch_size ", options_.batch_size_, " = ", step,
           "; lower either");
}

int64_t Loader::read_limit() const {
  const int64_t n = dataset_->size();
  if (!by_batches_ || whole_ == 0) return n;
  const int64_t step = whole_ * options_.batch_size_;
  return n / step * step;
}

int64_t Loader::reader_threads() const {
  if (options_.workers_ >= 0) return options_.workers_;
  return dataset_->in_memory() ? 0 : 2;
}

int64_t Loader::batches_per_epoch() const {
  const int64_t n = epoch_size(), b = options_.batch_size_;
  return options_.drop_last_ ? n / b : (n + b - 1) / b;
}

int64_t Loader::most_batches_per_epoch() const {
  // Rank 0's shard is the largest: positions 0, world, 2 world, ...
  const int64_t size = dataset_->size();
  const int64_t n = by_batches_
                        ? EpochOrder::size_in_blocks(read_limit(), options_.batch_size_, 0, world_)
                    : world_ == 1 || pad_ ? epoch_size()
                                          : (size + world_ - 1) / world_;
  const int64_t b = options_.batch_size_;
  return options_.drop_last_ ? n / b : (n + b - 1) / b;
}

void Loader::bucket(std::vector<int64_t>& order, int64_t epoch) const {
  // Across ranks: a window holds world x batch examples per batch, so that after sharding each
  // rank's batches are still runs of similar lengths.
  // (distributed.reproducible: a step's micro-shards, whatever the world size.)
  const auto batch =
      static_cast<size_t>(options_.batch_size_ * (by_batches_ && whole_ > 0 ? whole_ : world_));
  const size_t window = batch * static_cast<size_t>(options_.bucket_window_);
  for (size_t start = 0, w = 0; start < order.size(); start += window, ++w) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(start);
    const auto last =
        order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + window));
    std::stable_sort(first, last, [&](int64_t a, int64_t b) {
      return lengths_[static_cast<size_t>(a)] < lengths_[static_cast<size_t>(b)];
    });
    // Shuffle the window's whole batches (a short last one stays last: drop_last drops it).
    const auto size = static_cast<size_t>(last - first);
    const int64_t whole = static_cast<int64_t>(size / batch);
    const SeededPermutation perm(shuffle_, whole,
                                 mix_seed(mix_seed(seed_, static_cast<uint64_t>(epoch)), w + 1));
    std::vector<int64_t> shuffled;
    shuffled.reserve(size);
    for (int64_t k = 0; k < whole; ++k) {
      const int64_t p = perm(k);
      shuffled.insert(shuffled.end(), first + p * static_cast<int64_t>(batch),
                      first + (p + 1) * static_cast<int64_t>(batch));
    }
    shuffled.insert(shuffled.end(), first + whole * static_cast<int64_t>(batch), last);
    std::copy(shuffled.begin(), shuffled.end(), first);
  }
}

EpochOrder Loader::epoch_order(int64_t epoch) const {
  const int64_t n = dataset_->size();
  const uint64_t seed = mix_seed(seed_, static_cast<uint64_t>(epoch));
  EpochOrder all =
      options_.shuffle_ ? EpochOrder(SeededPermutation(shuffle_, n, seed)) : EpochOrder(n);
  if (!lengths_.empty()) {
    std::vector<int64_t> listed = all.to_vector();
    bucket(listed, epoch);
    all = EpochOrder(std::move(listed));
  }
  if (by_batches_) return all.sharded_in_blocks(rank_, world_, options_.batch_size_, read_limit());
  return world_ == 1 ? all : all.sharded(rank_, world_, pad_);
}

std::unique_ptr<EpochIterator> Loader::epoch(int64_t epoch, int64_t start_batch) const {
  const int64_t batches = batches_per_epoch();
  UT_CHECK(start_batch >= 0 && start_batch <= batches, name_, ": cannot start epoch ", epoch,
           " at batch ", start_batch, "; it has ", batches, " batches");
  detail::EpochPlan plan{dataset_,
                         epoch_order(epoch),
                         options_.batch_size_,
                         batches,
                         name_,
                         ReadContext{seed_, epoch},
                         options_.pin_memory_ == PinMemory::On};
  const int64_t workers = reader_threads();
  if (workers == 0) return detail::make_serial_iterator(std::move(plan), start_batch);
  return detail::make_threaded_iterator(std::move(plan), start_batch, workers, options_.prefetch_);
}

}  // namespace unitrain
