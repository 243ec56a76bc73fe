// WordCache: the ids of words a thread has seen, by word, bounded, one per tokenizer a thread.
#include "unitrain/text/hf_tokenizer/word_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace unitrain::hf {
namespace {

/// The ids `cache` holds for `word`, or {-1} when it holds none.
std::vector<int> word_cache_ids(const WordCache& cache, std::string_view word) {
  size_t count = 0;
  const int* ids = cache.find(word, &count);
  return ids ? std::vector<int>(ids, ids + count) : std::vector<int>{-1};
}

TEST(HfWordCache, KeepsTheIdsOfShortAndLongWords) {
  WordCache cache;
  EXPECT_EQ(word_cache_ids(cache, "hello"), (std::vector<int>{-1}));
  cache.insert("hello", {1, 2});
  EXPECT_EQ(word_cache_ids(cache, "hello"), (std::vector<int>{1, 2}));
  // Longer than a slot holds: a word past 16 bytes, more than 5 ids.
  const std::string long_word = "0123456789abcdef_x";
  cache.insert(long_word, {1, 2, 3, 4, 5, 6, 7});
  cache.insert("0123456789abcdef_y", {8});
  EXPECT_EQ(word_cache_ids(cache, long_word), (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(word_cache_ids(cache, "0123456789abcdef_y"), (std::vector<int>{8}));
  EXPECT_EQ(word_cache_ids(cache, "0123456789abcdef_z"), (std::vector<int>{-1}));
  // Words that differ only by a trailing zero byte, or by the 16th byte, are apart.
  cache.insert(std::string("ab\0", 3), {3});
  EXPECT_EQ(word_cache_ids(cache, "ab"), (std::vector<int>{-1}));
  EXPECT_EQ(word_cache_ids(cache, std::string("ab\0", 3)), (std::vector<int>{3}));
  cache.insert("0123456789abcdeX", {4});
  EXPECT_EQ(word_cache_ids(cache, "0123456789abcdeY"), (std::vector<int>{-1}));
  // A word of no ids (a model that drops it) is found, with none.
  cache.insert("dropped", {});
  size_t count = 99;
  EXPECT_NE(cache.find("dropped", &count), nullptr);
  EXPECT_EQ(count, 0u);
}

TEST(HfWordCache, StartsAgainEmptyWhenFull) {
  WordCache cache;
  for (size_t i = 0; i < WordCache::kMaxWords; ++i) {
    cache.insert("w" + std::to_string(i), {static_cast<int>(i)});
  }
  EXPECT_EQ(word_cache_ids(cache, "w0"), (std::vector<int>{0}));
  EXPECT_EQ(word_cache_ids(cache, "w32767"), (std::vector<int>{32767}));
  cache.insert("one more", {7});
  EXPECT_EQ(word_cache_ids(cache, "w0"), (std::vector<int>{-1}));
  EXPECT_EQ(word_cache_ids(cache, "w32767"), (std::vector<int>{-1}));
  EXPECT_EQ(word_cache_ids(cache, "one more"), (std::vector<int>{7}));
}

TEST(HfWordCache, EachThreadHasOneCacheATokenizerForItsLastFewTokenizers) {
  // Serials far above those real tokenizers take (they count from 1).
  const uint64_t serial = uint64_t{1} << 62;
  WordCache& mine = WordCache::of(serial);
  EXPECT_EQ(&WordCache::of(serial), &mine);
  EXPECT_NE(&WordCache::of(serial + 1), &mine);
  mine.insert("kept", {5});
  EXPECT_EQ(word_cache_ids(WordCache::of(serial), "kept"), (std::vector<int>{5}));
  std::thread([&] { EXPECT_NE(&WordCache::of(serial), &mine); }).join();
  // Four other tokenizers later, the first one's cache is gone: a new, empty one.
  for (uint64_t k = 1; k <= 4; ++k) WordCache::of(serial + k);
  EXPECT_EQ(word_cache_ids(WordCache::of(serial), "kept"), (std::vector<int>{-1}));
}

}  // namespace
}  // namespace unitrain::hf
