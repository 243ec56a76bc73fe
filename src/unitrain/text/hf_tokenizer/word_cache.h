#pragma once
// The ids of the words a tokenizer has seen, per thread: the loader threads encode most words
// many times, and a flat table with the short words inside it answers with one memory access.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain::hf {

/// A bounded word -> ids table, open addressing with linear probing. Not thread-safe: each
/// thread has its own (WordCache::of). When it holds kMaxWords words it starts again empty.
class WordCache {
 public:
  static constexpr size_t kMaxWords = 32768;

  WordCache();
  /// The ids of `word`, or null when they are not here yet; `*count` is their number.
  const int* find(std::string_view word, size_t* count) const;
  /// Keeps the ids of `word` (not here yet).
  void insert(std::string_view word, const std::vector<int>& ids);

  /// The calling thread's cache for the tokenizer numbered `tokenizer` (a thread keeps those of
  /// its last few tokenizers).
  static WordCache& of(uint64_t tokenizer);

 private:
  static constexpr size_t kSlots = 2 * kMaxWords;  // a power of two: load at most 1/2
  static constexpr size_t kInlineKey = 16;         // words up to this long live in the slot
  static constexpr size_t kInlineIds = 5;          // and up to this many ids
  /// One cache line: a hit reads nothing else for a short word of a few ids.
  struct alignas(64) Slot {
    uint64_t hash = 0;         ///< 0: empty
    uint64_t key[2] = {0, 0};  ///< a short word, zero-padded
    uint32_t key_at = 0;       ///< a longer word: where in long_keys_
    uint32_t ids_at = 0;       ///< more ids: where in ids_
    uint16_t key_size = 0, count = 0;
    int ids[kInlineIds] = {};
  };
  static uint64_t hash_of(std::string_view word);
  bool same_key(const Slot& s, std::string_view word, const uint64_t* padded) const {
    if (s.key_size != word.size()) return false;
    if (word.size() <= kInlineKey) return s.key[0] == padded[0] && s.key[1] == padded[1];
    return std::string_view(long_keys_).substr(s.key_at, s.key_size) == word;
  }

  std::vector<Slot> slots_;
  std::vector<int> ids_;
  std::string long_keys_;
  size_t words_ = 0;
};

}  // namespace unitrain::hf
