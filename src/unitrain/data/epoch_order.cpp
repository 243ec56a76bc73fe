#include "unitrain/data/epoch_order.h"

#include <algorithm>

namespace unitrain {

EpochOrder::EpochOrder(int64_t n) : n_(n), size_(n) {}

EpochOrder::EpochOrder(SeededPermutation permutation)
    : n_(permutation.size()), permutation_(std::move(permutation)), size_(n_) {}

EpochOrder::EpochOrder(std::vector<int64_t> listed)
    : n_(static_cast<int64_t>(listed.size())),
      listed_(std::make_shared<const std::vector<int64_t>>(std::move(listed))),
      size_(n_) {}

EpochOrder EpochOrder::sharded(int rank, int world, bool pad) const {
  EpochOrder out = *this;
  out.rank_ = rank;
  out.world_ = world;
  const int64_t total = pad ? (n_ + world - 1) / world * world : n_;
  out.size_ = total > rank ? (total - rank + world - 1) / world : 0;
  return out;
}

int64_t EpochOrder::base(int64_t j) const {
  j %= n_;  // padding: the order's own beginning again
  if (listed_) return (*listed_)[static_cast<size_t>(j)];
  if (permutation_) return (*permutation_)(j);
  return j;
}

int64_t EpochOrder::at(int64_t i) const { return base(rank_ + i * world_); }

std::vector<int64_t> EpochOrder::slice(int64_t begin, int64_t end) const {
  end = std::min(end, size_);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  for (int64_t i = begin; i < end; ++i) out.push_back(at(i));
  return out;
}

}  // namespace unitrain
