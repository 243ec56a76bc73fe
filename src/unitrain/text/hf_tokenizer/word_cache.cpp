#include "unitrain/text/hf_tokenizer/word_cache.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace unitrain::hf {

WordCache::WordCache() : slots_(kSlots) {}

uint64_t WordCache::hash_of(std::string_view word) {
  // 8 bytes at a time, multiplied and folded (a wyhash-like mix); never 0 (0 marks empty).
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ word.size();
  size_t i = 0;
  for (; i + 8 <= word.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, word.data() + i, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
  }
  if (i < word.size()) {
    uint64_t v = 0;
    std::memcpy(&v, word.data() + i, word.size() - i);
    h = (h ^ v) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
  }
  h = (h ^ (h >> 32)) * 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 31;
  return h | 1;
}

const int* WordCache::find(std::string_view word, size_t* count) const {
  const uint64_t h = hash_of(word);
  uint64_t padded[2] = {0, 0};
  std::memcpy(padded, word.data(), std::min(word.size(), kInlineKey));
  for (size_t i = h & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
    const Slot& s = slots_[i];
    if (s.hash == 0) return nullptr;
    if (s.hash == h && same_key(s, word, padded)) {
      *count = s.count;
      return s.count <= kInlineIds ? s.ids : ids_.data() + s.ids_at;
    }
  }
}

void WordCache::insert(std::string_view word, const std::vector<int>& ids) {
  if (ids.size() > UINT16_MAX || word.size() > UINT16_MAX) return;  // not worth keeping
  if (words_ >= kMaxWords || long_keys_.size() + word.size() > UINT32_MAX ||
      ids_.size() + ids.size() > UINT32_MAX) {
    std::fill(slots_.begin(), slots_.end(), Slot());
    ids_.clear();
    long_keys_.clear();
    words_ = 0;
  }
  const uint64_t h = hash_of(word);
  size_t i = h & (kSlots - 1);
  while (slots_[i].hash != 0) i = (i + 1) & (kSlots - 1);
  Slot& s = slots_[i];
  s.hash = h;
  s.key_size = static_cast<uint16_t>(word.size());
  if (word.size() <= kInlineKey) {
    std::memcpy(s.key, word.data(), word.size());
  } else {
    s.key_at = static_cast<uint32_t>(long_keys_.size());
    long_keys_.append(word);
  }
  s.count = static_cast<uint16_t>(ids.size());
  if (ids.size() <= kInlineIds) {
    std::copy(ids.begin(), ids.end(), s.ids);
  } else {
    s.ids_at = static_cast<uint32_t>(ids_.size());
    ids_.insert(ids_.end(), ids.begin(), ids.end());
  }
  ++words_;
}

WordCache& WordCache::of(uint64_t tokenizer) {
  constexpr size_t kTokenizers = 4;
  thread_local std::vector<std::pair<uint64_t, std::unique_ptr<WordCache>>> caches;
  for (auto& [serial, cache] : caches) {
    if (serial == tokenizer) return *cache;
  }
  if (caches.size() >= kTokenizers) caches.erase(caches.begin());
  caches.emplace_back(tokenizer, std::make_unique<WordCache>());
  return *caches.back().second;
}

}  // namespace unitrain::hf
