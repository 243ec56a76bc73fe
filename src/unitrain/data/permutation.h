#pragma once
// Seeded permutations that depend only on their seed: same on every platform and thread count.
#include <cstdint>
#include <vector>

namespace unitrain {

/// Mixes a base seed with a stream number (e.g. the epoch) into an independent 64-bit seed
/// (splitmix64 of both).
uint64_t mix_seed(uint64_t seed, uint64_t stream);

/// A permutation of 0..n-1 by Fisher-Yates driven by std::mt19937_64(seed). Written out (not
/// std::shuffle / uniform_int_distribution, whose algorithms vary by library) so an order is
/// reproducible everywhere.
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

}  // namespace unitrain
