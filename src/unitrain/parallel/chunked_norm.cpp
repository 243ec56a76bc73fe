#include "unitrain/parallel/chunked_norm.h"

#include <torch/torch.h>

#include <map>
#include <string>

#include "unitrain/parallel/process_group.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {
namespace {

constexpr int64_t kBlock = ParameterBlockSquares::kBlock;

int64_t padded(int64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

}  // namespace

ChunkedNorm::ChunkedNorm(const torch::nn::Module& module, std::shared_ptr<ProcessGroup> group,
                         std::shared_ptr<ProcessGroup> stages)
    : group_(std::move(group)),
      stages_(std::move(stages)),
      part_(tp::rank_of(group_.get())),
      squares_(std::vector<int64_t>{}) {
  std::map<std::string, tp::Split> splits;
  for (auto& [name, split] : tp::splits_of(module)) splits.emplace(name, split);
  const int parts = tp::size_of(group_.get());
  std::vector<int64_t> numels;
  for (const auto& named : module.named_parameters()) {
    const torch::Tensor& p = named.value();
    if (!p.requires_grad()) continue;
    Param entry{p};
    const auto it = splits.find(named.key());
    if (it != splits.end() && it->second.chunks > 0) {
      entry.dim = it->second.dim;
      entry.blocks = it->second.blocks;
      entry.chunks = it->second.chunks;
      entry.padded_chunk = padded(p.numel() / entry.chunks);
      numels.push_back(entry.padded_chunk * entry.chunks * parts);
    } else {
      numels.push_back(p.numel());
    }
    params_.push_back(std::move(entry));
  }
  squares_ = ParameterBlockSquares(numels);
}

ChunkedNorm::~ChunkedNorm() = default;

double ChunkedNorm::norm() {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    const torch::Tensor& grad = p.param.grad();
    if (!grad.defined()) continue;
    if (p.chunks == 0) {  // whole and equal on every part: counted once
      if (part_ == 0) squares_.add(i, 0, grad);
      continue;
    }
    // The split dim as [blocks, chunks, m]: chunk j is slice j of every block.
    std::vector<int64_t> shape(grad.sizes().begin(), grad.sizes().end());
    const int64_t m = shape[size_t(p.dim)] / p.blocks / p.chunks;
    shape[size_t(p.dim)] = m;
    shape.insert(shape.begin() + p.dim, {p.blocks, p.chunks});
    const torch::Tensor chunked = grad.reshape(shape);
    for (int64_t j = 0; j < p.chunks; ++j) {
      squares_.add(i, (part_ * p.chunks + j) * p.padded_chunk,
                   chunked.select(p.dim + 1, j).contiguous());
    }
  }
  squares_.sum_over(group_.get());
  return squares_.norm(stages_.get());
}

}  // namespace unitrain
