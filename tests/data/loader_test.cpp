#include "unitrain/data/loader.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <thread>

#include "data_test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/data/permutation.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

using Clock = std::chrono::steady_clock;

DatasetPtr numbered(int64_t n) {
  return std::make_shared<TensorDataset>(
      Batch{{"x", torch::arange(n, torch::kInt64)}, {"y", torch::arange(n, torch::kFloat32)}});
}

// Example i is {x: i}; get(bad) throws; get_batch is the default (collate of get).
class PickyDataset : public Dataset {
 public:
  PickyDataset(int64_t n, int64_t bad, int sleep_ms = 0) : n_(n), bad_(bad), sleep_ms_(sleep_ms) {}
  int64_t size() const override { return n_; }
  Batch get(int64_t i) const override {
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    if (i == bad_) throw std::runtime_error("cannot decode example " + std::to_string(i));
    return {{"x", torch::tensor(i)}};
  }

 private:
  int64_t n_, bad_;
  int sleep_ms_;
};

// The x values of every batch of an epoch, batch by batch.
std::vector<std::vector<int64_t>> read_epoch(const Loader& loader, int64_t epoch,
                                             int64_t start = 0) {
  std::vector<std::vector<int64_t>> out;
  auto it = loader.epoch(epoch, start);
  while (auto batch = it->next()) {
    torch::Tensor x = batch->at("x");
    out.emplace_back(x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.numel());
    EXPECT_TRUE(torch::equal(batch->at("y").to(torch::kInt64), x));  // keys stay aligned
  }
  return out;
}

TEST(Loader, OrderIsTheSameForAnyNumberOfWorkers) {
  DatasetPtr data = numbered(103);
  auto options = LoaderOptions().batch_size(8).prefetch(2);
  auto reference = read_epoch(Loader(data, LoaderOptions(options).workers(0), 11), 2);
  ASSERT_EQ(reference.size(), 13u);
  EXPECT_EQ(reference.back().size(), 7u);
  std::set<int64_t> seen;
  for (const auto& b : reference) seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 103u);  // each example exactly once
  for (int64_t workers : {1, 3}) {
    Loader loader(data, LoaderOptions(options).workers(workers), 11);
    EXPECT_EQ(read_epoch(loader, 2), reference) << workers << " workers";
  }
  Loader loader(data, LoaderOptions(options).workers(3), 11);
  std::vector<int64_t> flat;
  for (const auto& b : reference) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_EQ(loader.order(2), flat);
}

TEST(Loader, ShuffleDependsOnSeedAndEpochOnly) {
  DatasetPtr data = numbered(50);
  auto options = LoaderOptions().batch_size(10).workers(2);
  Loader a(data, options, 1), b(data, options, 1), c(data, options, 2);
  EXPECT_EQ(read_epoch(a, 0), read_epoch(b, 0));
  EXPECT_NE(read_epoch(a, 0), read_epoch(a, 1));
  EXPECT_NE(read_epoch(a, 0), read_epoch(c, 0));
  EXPECT_EQ(a.order(5), b.order(5));
  std::vector<int64_t> identity(50);
  for (int64_t i = 0; i < 50; ++i) identity[static_cast<size_t>(i)] = i;
  EXPECT_NE(a.order(0), identity);
  Loader in_order(data, LoaderOptions(options).shuffle(false), 1);
  EXPECT_EQ(in_order.order(0), identity);
  EXPECT_EQ(in_order.order(3), identity);
}

TEST(Loader, ShufflesPerIndexAndKeepsFisherYatesForOlderRuns) {
  DatasetPtr data = numbered(50);
  auto options = LoaderOptions().batch_size(10).workers(0);
  const uint64_t epoch_seed = mix_seed(1, 3);
  // New runs: the Feistel bijection of (seed, epoch).
  const FeistelPermutation feistel(50, epoch_seed);
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 50; ++i) expected.push_back(feistel(i));
  EXPECT_EQ(Loader(data, options, 1).order(3), expected);
  // A run resumed from a checkpoint without data_order: the Fisher-Yates order it trained on,
  // read from its batches too.
  Loader old(data, options, 1, "data", ShuffleAlgorithm::FisherYates);
  EXPECT_EQ(old.order(3), seeded_permutation(50, epoch_seed));
  std::vector<int64_t> read;
  for (const auto& b : read_epoch(old, 3)) read.insert(read.end(), b.begin(), b.end());
  EXPECT_EQ(read, seeded_permutation(50, epoch_seed));
  // Sharded: rank r's i-th index is the order's r + i * world, padded by its beginning.
  Loader rank2(data, options, 1);
  rank2.shard(2, 3, true);
  const std::vector<int64_t> mine = rank2.order(3);
  ASSERT_EQ(mine.size(), 17u);
  for (size_t i = 0; i < mine.size(); ++i) {
    EXPECT_EQ(mine[i], expected[(2 + i * 3) % 50]) << i;
  }
}

TEST(Loader, DropLast) {
  DatasetPtr data = numbered(10);
  Loader keep(data, LoaderOptions().batch_size(4).workers(1), 0);
  Loader drop(data, LoaderOptions().batch_size(4).workers(1).drop_last(true), 0);
  EXPECT_EQ(keep.batches_per_epoch(), 3);
  EXPECT_EQ(drop.batches_per_epoch(), 2);
  auto kept = read_epoch(keep, 0), dropped = read_epoch(drop, 0);
  ASSERT_EQ(kept.size(), 3u);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(kept[2].size(), 2u);
  EXPECT_EQ(dropped[0], kept[0]);
  EXPECT_EQ(dropped[1], kept[1]);
}

TEST(Loader, SeekEqualsSkipping) {
  DatasetPtr data = numbered(40);
  for (int64_t workers : {0, 2}) {
    Loader loader(data, LoaderOptions().batch_size(6).workers(workers), 9);
    auto full = read_epoch(loader, 4);
    auto tail = read_epoch(loader, 4, 3);
    ASSERT_EQ(tail.size(), full.size() - 3);
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), full.begin() + 3));
    EXPECT_TRUE(read_epoch(loader, 4, loader.batches_per_epoch()).empty());
    std::string msg = test::config_error_of([&] { loader.epoch(0, 8); });
    EXPECT_NE(msg.find("cannot start epoch 0 at batch 8; it has 7 batches"), std::string::npos)
        << msg;
  }
}

TEST(Loader, WorkerExceptionsAreRethrownByNext) {
  auto data = std::make_shared<PickyDataset>(20, 13);
  for (int64_t workers : {0, 1, 3}) {
    Loader loader(data, LoaderOptions().batch_size(4).workers(workers).shuffle(false), 0,
                  "data.train");
    auto it = loader.epoch(0);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(it->next().has_value()) << workers;
    try {
      it->next();
      ADD_FAILURE() << "no exception with " << workers << " workers";
    } catch (const TrainError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("data.train: batch 3"), std::string::npos) << msg;
      EXPECT_NE(msg.find("cannot decode example 13"), std::string::npos) << msg;
    }
    EXPECT_FALSE(it->next().has_value());  // the pass ends after a failure
  }
}

TEST(Loader, EarlyDestructionDoesNotHang) {
  auto data = std::make_shared<PickyDataset>(10000, -1, /*sleep_ms=*/1);
  Loader loader(data, LoaderOptions().batch_size(4).workers(3).prefetch(2), 0);
  auto start = Clock::now();
  {
    auto it = loader.epoch(0);
    ASSERT_TRUE(it->next().has_value());
  }                                   // workers are blocked on full queues or mid-batch here
  { auto unused = loader.epoch(1); }  // destroyed before any next()
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
}

TEST(Loader, WaitSecondsMeasuresBlockedTime) {
  auto data = std::make_shared<PickyDataset>(8, -1, /*sleep_ms=*/10);
  Loader loader(data, LoaderOptions().batch_size(2).workers(1).prefetch(1).shuffle(false), 0);
  auto it = loader.epoch(0);
  int batches = 0;
  while (auto b = it->next()) {
    EXPECT_TRUE(torch::equal(b->at("x"), torch::tensor({2 * batches, 2 * batches + 1})));
    ++batches;
  }
  EXPECT_EQ(batches, 4);
  EXPECT_GT(it->wait_seconds(), 0.04);  // 4 batches of 20 ms, none ready in advance at first
  EXPECT_LT(it->wait_seconds(), 2.0);
}

TEST(Loader, ConstructionErrors) {
  std::string msg =
      test::config_error_of([] { Loader(numbered(10), LoaderOptions().batch_size(0), 0); });
  EXPECT_NE(msg.find("data.loader.batch_size must be > 0, got 0"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { Loader(numbered(5), LoaderOptions().batch_size(8).drop_last(true), 0, "data.val"); });
  EXPECT_NE(msg.find("data.val has 5 examples"), std::string::npos) << msg;
  EXPECT_NE(msg.find("data.loader.batch_size = 8"), std::string::npos) << msg;
  msg = test::config_error_of(
      [] { Loader(std::make_shared<PickyDataset>(0, -1), LoaderOptions(), 0, "data.train"); });
  EXPECT_NE(msg.find("data.train is empty"), std::string::npos) << msg;
  msg = test::config_error_of([] { Loader(numbered(5), LoaderOptions().workers(-2), 0); });
  EXPECT_NE(msg.find("data.loader.workers must be >= 0"), std::string::npos) << msg;
}

TEST(Loader, AutoWorkersReadInMemoryDataInTheTrainingThread) {
  struct OnDisk : Dataset {
    int64_t size() const override { return 4; }
    Batch get(int64_t i) const override { return Batch{{"x", torch::tensor(i)}}; }
  };
  EXPECT_EQ(Loader(numbered(10), LoaderOptions(), 0).reader_threads(), 0);
  EXPECT_EQ(Loader(std::make_shared<OnDisk>(), LoaderOptions(), 0).reader_threads(), 2);
  EXPECT_EQ(Loader(numbered(10), LoaderOptions().workers(3), 0).reader_threads(), 3);
  // A bad value is refused when the section is resolved, naming the key.
  Config bad = Config(YAML::Load("{workers: some}"), "data.loader");
  EXPECT_THROW(LoaderOptions::schema()->resolve(bad), ConfigError);
  const std::string msg = test::config_error_of([&] { LoaderOptions::from_config(bad); });
  EXPECT_NE(msg.find("data.loader.workers: expected int or auto, got 'some'"), std::string::npos)
      << msg;
}

TEST(Loader, PinMemoryAutoFollowsTheDeviceAndTrueNeedsAGpu) {
  // auto resolves to pinned batches for a GPU, to plain ones for the CPU.
  EXPECT_EQ(LoaderOptions().for_device(true).pin_memory_, PinMemory::On);
  EXPECT_EQ(LoaderOptions().for_device(false).pin_memory_, PinMemory::Off);
  EXPECT_EQ(LoaderOptions().pin_memory(PinMemory::Off).for_device(true).pin_memory_,
            PinMemory::Off);
  // true for a run on the CPU is refused, naming the key, whether checked or resolved.
  const LoaderOptions on = LoaderOptions().pin_memory(PinMemory::On);
  EXPECT_NO_THROW(on.check_pin_memory(true));
  for (const auto& f : std::vector<std::function<void()>>{[&] { on.check_pin_memory(false); },
                                                          [&] { on.for_device(false); }}) {
    const std::string m = test::config_error_of(f);
    EXPECT_NE(m.find("data.loader.pin_memory: true pins batches for copies to a GPU"),
              std::string::npos)
        << m;
  }
  // The key reads YAML's booleans and auto; anything else names the choices.
  auto pin_of = [](const char* yaml) {
    return LoaderOptions::from_config(Config(YAML::Load(yaml), "data.loader")).pin_memory_;
  };
  EXPECT_EQ(pin_of("{}"), PinMemory::Auto);
  EXPECT_EQ(pin_of("{pin_memory: auto}"), PinMemory::Auto);
  EXPECT_EQ(pin_of("{pin_memory: true}"), PinMemory::On);
  EXPECT_EQ(pin_of("{pin_memory: false}"), PinMemory::Off);
  const std::string m = test::config_error_of([&] { pin_of("{pin_memory: always}"); });
  EXPECT_NE(m.find("data.loader.pin_memory"), std::string::npos) << m;
}

TEST(Loader, WithoutPinMemoryBatchesAreAsTheDatasetReadThem) {
  // pin_memory off (the CPU's): plain host tensors, as read.
  const Loader loader(numbered(8), LoaderOptions().batch_size(4).shuffle(false).for_device(false),
                      0);
  auto it = loader.epoch(0);
  const std::optional<Batch> b = it->next();
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->at("x").is_pinned());
  EXPECT_TRUE(torch::equal(b->at("x"), torch::arange(4, torch::kInt64)));
}

TEST(LoaderShard, PaddedShardsAreEqualAndCoverEveryExample) {
  DatasetPtr data = numbered(10);
  auto options = LoaderOptions().batch_size(3).workers(0);
  std::multiset<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    Loader shard(data, options, 5);
    shard.shard(r, 3, /*pad=*/true);
    EXPECT_EQ(shard.epoch_size(), 4);
    EXPECT_EQ(shard.batches_per_epoch(), 2);
    for (const auto& b : read_epoch(shard, 1)) all.insert(b.begin(), b.end());
  }
  EXPECT_EQ(all.size(), 12u);  // 10 examples, 2 read twice
  for (int64_t i = 0; i < 10; ++i) EXPECT_GE(all.count(i), 1u) << i;
}

TEST(LoaderShard, UnpaddedShardsAreDisjointAndReadEveryExampleOnce) {
  DatasetPtr data = numbered(10);
  auto options = LoaderOptions().batch_size(4).workers(0).shuffle(false);
  std::multiset<int64_t> all;
  std::vector<int64_t> sizes;
  for (int r = 0; r < 3; ++r) {
    Loader shard(data, options, 5);
    shard.shard(r, 3, /*pad=*/false);
    sizes.push_back(shard.epoch_size());
    for (const auto& b : read_epoch(shard, 0)) all.insert(b.begin(), b.end());
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(all.size(), 10u);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(all.count(i), 1u) << i;
}

TEST(LoaderShard, WorldTimesBatchMatchesOneProcessBatchByBatch) {
  // 2 ranks with batch 4 read, step by step, the examples one process reads with batch 8.
  DatasetPtr data = numbered(48);
  auto options = LoaderOptions().batch_size(4).workers(0);
  const auto single = read_epoch(Loader(data, LoaderOptions(options).batch_size(8), 9), 3);
  std::vector<std::vector<std::vector<int64_t>>> ranks;
  for (int r = 0; r < 2; ++r) {
    Loader shard(data, options, 9);
    shard.shard(r, 2, true);
    ranks.push_back(read_epoch(shard, 3));
  }
  ASSERT_EQ(single.size(), 6u);
  for (size_t g = 0; g < single.size(); ++g) {
    std::multiset<int64_t> want(single[g].begin(), single[g].end()), got;
    for (const auto& rank : ranks) got.insert(rank[g].begin(), rank[g].end());
    EXPECT_EQ(got, want) << "batch " << g;
  }
}

TEST(LoaderShard, SeekInsideAShardMatchesReadingFromTheStart) {
  DatasetPtr data = numbered(37);
  Loader shard(data, LoaderOptions().batch_size(3).workers(2), 4);
  shard.shard(1, 2, true);
  auto whole = read_epoch(shard, 2);
  auto tail = read_epoch(shard, 2, 4);
  ASSERT_EQ(tail.size() + 4, whole.size());
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], whole[i + 4]);
}

TEST(LoaderShard, ShardSmallerThanABatchWithDropLastIsAConfigError) {
  Loader loader(numbered(10), LoaderOptions().batch_size(4).drop_last(true), 0, "data.train");
  try {
    loader.shard(0, 4, true);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data.train has 10 examples, 3 per process of 4"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace unitrain

namespace unitrain {
namespace {

TEST(LoaderShardBatches, EveryWorldSizeReadsTheSameBatchesOfWholeSteps) {
  // distributed.reproducible: G = 6 micro-shards of 4 examples a step; 50 examples hold two
  // whole steps (48), the last 2 are not read. Batch k of the epoch is the same examples
  // whichever of W ranks reads it (rank k mod W).
  DatasetPtr data = numbered(50);
  auto options = LoaderOptions().batch_size(4).workers(0);
  std::vector<std::vector<int64_t>> alone;
  {
    Loader one(data, options, 9);
    one.shard_batches(0, 1, 6);
    EXPECT_EQ(one.epoch_size(), 48);
    EXPECT_EQ(one.batches_per_epoch(), 12);
    alone = read_epoch(one, 2);
  }
  ASSERT_EQ(alone.size(), 12u);
  for (int world : {2, 3, 6}) {
    for (int r = 0; r < world; ++r) {
      Loader shard(data, options, 9);
      shard.shard_batches(r, world, 6);
      EXPECT_EQ(shard.batches_per_epoch(), 12 / world) << world;
      const auto batches = read_epoch(shard, 2);
      for (size_t k = 0; k < batches.size(); ++k) {
        EXPECT_EQ(batches[k], alone[k * size_t(world) + size_t(r)]) << world << " " << r;
      }
    }
  }
}

TEST(LoaderShardBatches, ValidationReadsEveryExampleOnceInWholeBatches) {
  // whole = 0: every batch, the last short; 11 examples in batches of 4 over 2 ranks: rank 0
  // reads batches 0 and 2 (4 + 3 examples), rank 1 batch 1.
  DatasetPtr data = numbered(11);
  auto options = LoaderOptions().batch_size(4).workers(0).shuffle(false);
  std::vector<std::vector<int64_t>> got;
  for (int r = 0; r < 2; ++r) {
    Loader shard(data, options, 0);
    shard.shard_batches(r, 2, 0);
    for (auto& b : read_epoch(shard, 0)) got.push_back(b);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(got[1], (std::vector<int64_t>{8, 9, 10}));
  EXPECT_EQ(got[2], (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(LoaderShardBatches, FewerExamplesThanOneStepAreNamed) {
  Loader loader(numbered(20), LoaderOptions().batch_size(4).workers(0), 0, "data.train");
  try {
    loader.shard_batches(0, 2, 6);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data.train has 20 examples"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("distributed.reproducible"), std::string::npos);
  }
}

}  // namespace
}  // namespace unitrain
