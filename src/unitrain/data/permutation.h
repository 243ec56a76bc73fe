#pragma once
// Seeded permutations that depend only on their seed: same on every platform and thread count.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace unitrain {

/// Mixes a base seed with a stream number (e.g. the epoch) into an independent 64-bit seed
/// (splitmix64 of both).
uint64_t mix_seed(uint64_t seed, uint64_t stream);

/// A permutation of 0..n-1 by Fisher-Yates driven by std::mt19937_64(seed). Written out (not
/// std::shuffle / uniform_int_distribution, whose algorithms vary by library) so an order is
/// reproducible everywhere. Holds n indices: 8 bytes each.
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

/// A seeded bijection of [0, n) computed one index at a time, in O(1) memory: a balanced
/// Feistel network of six rounds (keys drawn from the seed by mix_seed) over the smallest
/// even-bit power of two >= n, cycle-walked back into [0, n) (at most 4 n / n = 4 tries on
/// average). Depends only on (n, seed).
class FeistelPermutation {
 public:
  FeistelPermutation(int64_t n, uint64_t seed);
  int64_t size() const { return static_cast<int64_t>(n_); }
  /// The image of i; requires 0 <= i < size().
  int64_t operator()(int64_t i) const;

 private:
  static constexpr int kRounds = 6;
  uint64_t encrypt(uint64_t x) const;
  uint64_t n_;
  int half_bits_ = 0;
  uint64_t half_mask_ = 0;
  std::array<uint64_t, kRounds> keys_{};
};

/// Which algorithm orders a shuffled epoch and draws a random split. A run keeps the one it
/// started with: checkpoints record it with the data position (trainer_state.json
/// `data_order`; absent = FisherYates, what unitrain used before Feistel), so a resume reads
/// the examples in the order it trained on.
enum class ShuffleAlgorithm : int {
  FisherYates = 1,  ///< seeded_permutation: n indices in memory
  Feistel = 2,      ///< FeistelPermutation: O(1) memory; what new runs use
};
constexpr ShuffleAlgorithm kCurrentShuffle = ShuffleAlgorithm::Feistel;

/// A seeded permutation of [0, n) by either algorithm, read one index at a time. Copies share
/// the Fisher-Yates table.
class SeededPermutation {
 public:
  SeededPermutation(ShuffleAlgorithm algorithm, int64_t n, uint64_t seed);
  int64_t size() const { return feistel_.size(); }
  /// The image of i; requires 0 <= i < size().
  int64_t operator()(int64_t i) const {
    return table_ ? (*table_)[static_cast<size_t>(i)] : feistel_(i);
  }

 private:
  FeistelPermutation feistel_;
  std::shared_ptr<const std::vector<int64_t>> table_;  ///< FisherYates: the whole permutation
};

}  // namespace unitrain
