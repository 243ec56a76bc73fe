#pragma once
// SubsetDataset and the seeded random split built on it.
#include <vector>

#include "unitrain/data/dataset.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

/// The examples of `inner` at `indices`, in that order (example i is inner[indices[i]]).
/// ConfigError when an index is out of range.
class SubsetDataset : public DatasetView {
 public:
  SubsetDataset(DatasetPtr inner, std::vector<int64_t> indices);

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;

  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  std::vector<int64_t> indices_;
};

/// Positions [begin, end) of a seeded permutation of `inner`: example i is
/// inner[permutation(begin + i)], computed when read (no list of indices).
class PermutedRangeDataset : public DatasetView {
 public:
  /// ConfigError unless 0 <= begin <= end <= permutation.size() == inner->size().
  PermutedRangeDataset(DatasetPtr inner, SeededPermutation permutation, int64_t begin, int64_t end);

  int64_t size() const override { return end_ - begin_; }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;

 private:
  int64_t inner_index(int64_t index) const;
  SeededPermutation permutation_;
  int64_t begin_, end_;
};

/// Two disjoint subsets covering `data`: `held_out` gets round(ratio * size) examples (at least
/// one) chosen by a permutation seeded by `seed`, `rest` the others. By `algorithm`:
/// - Feistel (new runs): held_out is the permutation's first positions, rest the others, each
///   in the permutation's order, computed per index (O(1) memory for data of any size);
/// - FisherYates (runs started before Feistel, resumed): the same choice from the
///   Fisher-Yates permutation, each part listed in the examples' original order.
/// ConfigError (naming `key`) unless 0 < ratio < 1 and both parts are non-empty.
struct Split {
  DatasetPtr rest;
  DatasetPtr held_out;
};
Split random_split(DatasetPtr data, double ratio, uint64_t seed,
                   const std::string& key = "data.validation_ratio",
                   ShuffleAlgorithm algorithm = kCurrentShuffle);

}  // namespace unitrain
