// The seeded permutations: Feistel bijections over any n, Fisher-Yates kept for old runs, and
// the epoch orders built on them.
#include "unitrain/data/permutation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "unitrain/data/epoch_order.h"

namespace unitrain {
namespace {

std::vector<int64_t> feistel_images(int64_t n, uint64_t seed) {
  const FeistelPermutation p(n, seed);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(p(i));
  return out;
}

bool is_permutation_of_range(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

TEST(FeistelPermutation, IsAPermutationForManySizes) {
  for (int64_t n : {0,   1,   2,   3,   4,   5,   7,    8,    16,   17,   31,    64,   97,
                    100, 127, 128, 129, 255, 256, 1000, 1023, 1024, 4099, 65536, 65537}) {
    for (uint64_t seed : {0ULL, 1ULL, 12345ULL}) {
      const std::vector<int64_t> images = feistel_images(n, seed);
      EXPECT_EQ(static_cast<int64_t>(images.size()), n);
      EXPECT_TRUE(is_permutation_of_range(images)) << "n " << n << " seed " << seed;
    }
  }
}

TEST(FeistelPermutation, DependsOnlyOnTheSeed) {
  EXPECT_EQ(feistel_images(1000, 7), feistel_images(1000, 7));
  EXPECT_NE(feistel_images(1000, 7), feistel_images(1000, 8));
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(feistel_images(1000, 7), identity);
  // Large sizes are computed per index, without a table: a few images of 15 G windows.
  const FeistelPermutation huge(int64_t(15) << 30, 3);
  const int64_t a = huge(0), b = huge(1);
  EXPECT_NE(a, b);
  EXPECT_TRUE(a >= 0 && a < huge.size() && b >= 0 && b < huge.size());
  EXPECT_EQ(FeistelPermutation(int64_t(15) << 30, 3)(1), b);
}

TEST(FeistelPermutation, SpreadsIndicesEvenly) {
  // Where each of n = 1000 indices lands, over 2000 seeds: every (index, tenth of the range)
  // cell is hit about 200 times; and adjacent indices do not stay adjacent.
  const int64_t n = 1000, seeds = 2000;
  std::vector<int64_t> cells(10 * 10, 0);
  int64_t adjacent = 0;
  for (uint64_t seed = 0; seed < static_cast<uint64_t>(seeds); ++seed) {
    const FeistelPermutation p(n, seed);
    for (int64_t i = 0; i < n; i += 100) ++cells[static_cast<size_t>((i / 100) * 10 + p(i) / 100)];
    if (std::abs(p(1) - p(0)) == 1) ++adjacent;
  }
  for (int64_t c : cells) EXPECT_TRUE(c > 130 && c < 270) << c;  // 200 +- 5 sigma
  EXPECT_LT(adjacent, 20);                                       // ~2/1000 of the seeds by chance
}

TEST(SeededPermutation, FisherYatesIsTheListedPermutation) {
  const SeededPermutation old(ShuffleAlgorithm::FisherYates, 50, 9);
  const std::vector<int64_t> listed = seeded_permutation(50, 9);
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(old(i), listed[static_cast<size_t>(i)]);
  const SeededPermutation current(ShuffleAlgorithm::Feistel, 50, 9);
  EXPECT_EQ(current(3), FeistelPermutation(50, 9)(3));
}

TEST(EpochOrder, ShardsWithPaddingAsAListWould) {
  const std::vector<int64_t> base = {4, 0, 3, 1, 2};
  // Padded to 6 by the order's beginning: rank 1 of 2 reads positions 1, 3, 5 -> 0, 1, 4.
  EXPECT_EQ(EpochOrder(base).sharded(1, 2, true).to_vector(), (std::vector<int64_t>{0, 1, 4}));
  EXPECT_EQ(EpochOrder(base).sharded(1, 2, false).to_vector(), (std::vector<int64_t>{0, 1}));
  // More ranks than examples: padding repeats the order.
  EXPECT_EQ(EpochOrder(2).sharded(4, 5, true).to_vector(), (std::vector<int64_t>{0}));
  EXPECT_EQ(EpochOrder(2).sharded(4, 5, false).size(), 0);
  const SeededPermutation p(ShuffleAlgorithm::Feistel, 5, 1);
  const EpochOrder shuffled(p);
  EXPECT_EQ(shuffled.sharded(0, 2, true).at(2), p(4));
  EXPECT_EQ(shuffled.slice(1, 99), (std::vector<int64_t>{p(1), p(2), p(3), p(4)}));
}

}  // namespace
}  // namespace unitrain
