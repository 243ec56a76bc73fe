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

EpochOrder EpochOrder::sharded_in_blocks(int rank, int world, int64_t block, int64_t limit) const {
  EpochOrder out = *this;
  out.rank_ = rank;
  out.world_ = world;
  out.block_ = block;
  out.size_ = size_in_blocks(std::min(limit, n_), block, rank, world);
  return out;
}

int64_t EpochOrder::size_in_blocks(int64_t limit, int64_t block, int rank, int world) {
  const int64_t blocks = (limit + block - 1) / block;
  if (blocks <= rank) return 0;
  const int64_t mine = (blocks - rank + world - 1) / world;
  const bool has_last = (blocks - 1) % world == rank;
  const int64_t short_by = limit % block == 0 ? 0 : block - limit % block;
  return mine * block - (has_last ? short_by : 0);
}

int64_t EpochOrder::base(int64_t j) const {
  j %= n_;  // padding: the order's own beginning again
  if (listed_) return (*listed_)[static_cast<size_t>(j)];
  if (permutation_) return (*permutation_)(j);
  return j;
}

int64_t EpochOrder::at(int64_t i) const {
  if (block_ > 0) return base(((i / block_) * world_ + rank_) * block_ + i % block_);
  return base(rank_ + i * world_);
}

std::vector<int64_t> EpochOrder::slice(int64_t begin, int64_t end) const {
  end = std::min(end, size_);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  for (int64_t i = begin; i < end; ++i) out.push_back(at(i));
  return out;
}

}  // namespace unitrain
