#include "unitrain/data/permutation.h"

#include <numeric>
#include <random>

namespace unitrain {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) without modulo bias (rejection sampling).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % bound;
}

}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  return splitmix64(splitmix64(seed) ^ (stream * 0xD1B54A32D192ED03ULL + 1));
}

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(i) + 1));
    std::swap(out[i], out[j]);
  }
  return out;
}

FeistelPermutation::FeistelPermutation(int64_t n, uint64_t seed)
    : n_(static_cast<uint64_t>(n < 0 ? 0 : n)) {
  int bits = 0;
  while (bits < 64 && (uint64_t{1} << bits) < n_) ++bits;
  half_bits_ = (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) keys_[r] = mix_seed(seed, static_cast<uint64_t>(r) + 1);
}

uint64_t FeistelPermutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (const uint64_t key : keys_) {
    const uint64_t mixed = left ^ (splitmix64(right ^ key) & half_mask_);
    left = right;
    right = mixed;
  }
  return (left << half_bits_) | right;
}

int64_t FeistelPermutation::operator()(int64_t i) const {
  // encrypt is a bijection of [0, 4^half_bits): following i's cycle from i < n reaches a value
  // below n again, and distinct starts reach distinct values.
  uint64_t x = encrypt(static_cast<uint64_t>(i));
  while (x >= n_) x = encrypt(x);
  return static_cast<int64_t>(x);
}

SeededPermutation::SeededPermutation(ShuffleAlgorithm algorithm, int64_t n, uint64_t seed)
    : feistel_(n, seed) {
  if (algorithm == ShuffleAlgorithm::FisherYates) {
    table_ = std::make_shared<const std::vector<int64_t>>(seeded_permutation(n, seed));
  }
}

}  // namespace unitrain
