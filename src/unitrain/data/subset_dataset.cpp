#include "unitrain/data/subset_dataset.h"

#include <algorithm>
#include <cmath>

#include "unitrain/core/error.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

SubsetDataset::SubsetDataset(DatasetPtr inner, std::vector<int64_t> indices)
    : DatasetView(std::move(inner)), indices_(std::move(indices)) {
  UT_CHECK(inner_ != nullptr, "subset of a null dataset");
  const int64_t n = inner_->size();
  for (int64_t i : indices_) {
    UT_CHECK(i >= 0 && i < n, "subset index ", i, " is out of range [0, ", n, ")");
  }
}

Batch SubsetDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "example index ", index, " is out of range [0, ", size(),
           ")");
  return inner_->get(indices_[static_cast<size_t>(index)]);
}

Batch SubsetDataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    UT_CHECK(i >= 0 && i < size(), "example index ", i, " is out of range [0, ", size(), ")");
    mapped.push_back(indices_[static_cast<size_t>(i)]);
  }
  return inner_->get_batch(mapped);
}

PermutedRangeDataset::PermutedRangeDataset(DatasetPtr inner, SeededPermutation permutation,
                                           int64_t begin, int64_t end)
    : DatasetView(std::move(inner)),
      permutation_(std::move(permutation)),
      begin_(begin),
      end_(end) {
  UT_CHECK(inner_ != nullptr, "subset of a null dataset");
  UT_CHECK(permutation_.size() == inner_->size(), "a permutation of ", permutation_.size(),
           " examples cannot pick from a dataset of ", inner_->size());
  UT_CHECK(0 <= begin_ && begin_ <= end_ && end_ <= permutation_.size(), "positions [", begin_,
           ", ", end_, ") are not within a permutation of ", permutation_.size());
}

int64_t PermutedRangeDataset::inner_index(int64_t index) const {
  UT_CHECK(index >= 0 && index < size(), "example index ", index, " is out of range [0, ", size(),
           ")");
  return permutation_(begin_ + index);
}

Batch PermutedRangeDataset::get(int64_t index) const { return inner_->get(inner_index(index)); }

Batch PermutedRangeDataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) mapped.push_back(inner_index(i));
  return inner_->get_batch(mapped);
}

Split random_split(DatasetPtr data, double ratio, uint64_t seed, const std::string& key,
                   ShuffleAlgorithm algorithm) {
  UT_CHECK(ratio > 0 && ratio < 1, key, " must be in (0, 1) to split, got ", ratio);
  const int64_t n = data->size();
  const auto held = std::max<int64_t>(1, std::llround(ratio * static_cast<double>(n)));
  UT_CHECK(held < n, key, " = ", ratio, " of ", n, " examples leaves none for training");
  const uint64_t split_seed = mix_seed(seed, 0x5u);
  if (algorithm == ShuffleAlgorithm::Feistel) {
    const SeededPermutation perm(algorithm, n, split_seed);
    return {std::make_shared<PermutedRangeDataset>(data, perm, held, n),
            std::make_shared<PermutedRangeDataset>(data, perm, 0, held)};
  }
  std::vector<int64_t> perm = seeded_permutation(n, split_seed);
  std::vector<int64_t> held_out(perm.begin(), perm.begin() + held);
  std::vector<int64_t> rest(perm.begin() + held, perm.end());
  std::sort(held_out.begin(), held_out.end());
  std::sort(rest.begin(), rest.end());
  return {std::make_shared<SubsetDataset>(data, std::move(rest)),
          std::make_shared<SubsetDataset>(data, std::move(held_out))};
}

}  // namespace unitrain
