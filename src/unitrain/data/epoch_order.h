#pragma once
// EpochOrder: the example indices one rank reads in one epoch, each computed when asked for.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "unitrain/data/permutation.h"

namespace unitrain {

/// The order of an epoch over n examples, as shard `rank` of `world` reads it: its i-th index is
/// the base order's index at rank + i * world. The base order is the identity, a seeded
/// permutation, or a materialised list (length bucketing). With `pad` the base order is
/// extended by its own beginning to a multiple of world (position j >= n reads position j mod
/// n); without it the shards are disjoint. No vector of all n indices unless given one: an
/// epoch of a dataset of any size costs O(1) memory.
class EpochOrder {
 public:
  /// The identity order of n examples (no shuffle).
  explicit EpochOrder(int64_t n);
  /// A seeded permutation of its size's examples.
  explicit EpochOrder(SeededPermutation permutation);
  /// An order held as a list (length bucketing sorts within windows).
  explicit EpochOrder(std::vector<int64_t> listed);

  /// This order as shard `rank` of `world`, padded or not (see the class comment).
  EpochOrder sharded(int rank, int world, bool pad) const;
  /// This order's first `limit` positions cut into blocks of `block` (batches), block k read by
  /// rank k mod `world`: its i-th index is the base order's at ((i / block) x world + rank) x
  /// block + i mod block. Which examples make up a block does not depend on `world`
  /// (distributed.reproducible); the last block is short when `limit` is not a multiple of it.
  EpochOrder sharded_in_blocks(int rank, int world, int64_t block, int64_t limit) const;
  /// How many of the first `limit` positions rank `rank` of `world` reads in blocks of `block`.
  static int64_t size_in_blocks(int64_t limit, int64_t block, int rank, int world);

  int64_t size() const { return size_; }
  /// Index i of the epoch; requires 0 <= i < size().
  int64_t at(int64_t i) const;
  /// Indices [begin, end) of the epoch (end clamped to size()).
  std::vector<int64_t> slice(int64_t begin, int64_t end) const;
  /// All indices, in order.
  std::vector<int64_t> to_vector() const { return slice(0, size_); }

 private:
  int64_t base(int64_t j) const;
  int64_t n_;
  std::optional<SeededPermutation> permutation_;
  std::shared_ptr<const std::vector<int64_t>> listed_;
  int64_t rank_ = 0, world_ = 1;
  int64_t block_ = 0;  ///< sharded_in_blocks' block; 0: by example (sharded)
  int64_t size_;
};

}  // namespace unitrain
