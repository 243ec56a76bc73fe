#include "unitrain/parallel/shard_ordered_reduce.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

/// `t` as a 1-D tensor of `padded` elements: itself, or a copy padded with zeros.
torch::Tensor padded_to(const torch::Tensor& t, int64_t padded) {
  torch::Tensor flat = t.reshape({-1});
  if (flat.numel() == padded) return flat.contiguous();
  torch::Tensor out = torch::zeros({padded}, flat.options());
  out.narrow(0, 0, flat.numel()).copy_(flat);
  return out;
}

}  // namespace

ShardOrderedReduce::ShardOrderedReduce(std::shared_ptr<ProcessGroup> group, MicroShardLayout layout,
                                       c10::ScalarType dtype, bool keep_buffer)
    : group_(std::move(group)), layout_(layout), keep_buffer_(keep_buffer) {
  TORCH_INTERNAL_ASSERT(group_->world_size() == layout_.world_size() &&
                        group_->rank() == layout_.rank());
  const auto options = torch::TensorOptions().dtype(dtype).device(group_->device());
  if (layout_.world_size() > 1 && keep_buffer_) {
    received_ = torch::empty({layout_.padded_numel()}, options);
  }
  owned_ = torch::empty({layout_.owned_numel()}, options);
}

ShardOrderedReduce::ShardOrderedReduce(MicroShardLayout layout, c10::ScalarType dtype,
                                       const torch::Device& device)
    : layout_(layout) {
  TORCH_INTERNAL_ASSERT(layout_.world_size() == 1);
  owned_ =
      torch::empty({layout_.owned_numel()}, torch::TensorOptions().dtype(dtype).device(device));
}

void ShardOrderedReduce::add(const torch::Tensor& shard_gradient) {
  start(shard_gradient);
  finish_add();
}

void ShardOrderedReduce::start(const torch::Tensor& shard_gradient) {
  TORCH_INTERNAL_ASSERT(!in_flight() && shard_gradient.scalar_type() == owned_.scalar_type() &&
                        (shard_gradient.numel() == layout_.numel() ||
                         shard_gradient.numel() == layout_.padded_numel()));
  torch::NoGradGuard no_grad;
  mine_ = padded_to(shard_gradient, layout_.padded_numel());
  if (layout_.world_size() == 1) {
    wait_ = [] {};
    return;
  }
  // received_'s part q: this rank's slice of shard shard_at(done_, q), from rank q.
  if (!received_.defined()) received_ = torch::empty_like(mine_);
  wait_ = group_->start_all_to_all(received_, mine_);
}

void ShardOrderedReduce::finish_add() {
  TORCH_INTERNAL_ASSERT(in_flight());
  std::function<void()> wait = std::move(wait_);
  wait_ = nullptr;
  wait();
  if (complete()) done_ = 0;  // the first micro-step of the next step
  torch::NoGradGuard no_grad;
  const int world = layout_.world_size();
  const int64_t n = layout_.owned_numel();
  const torch::Tensor& parts = world > 1 ? received_ : mine_;
  for (int q = 0; q < world; ++q) {
    const torch::Tensor part = parts.narrow(0, q * n, n);
    if (done_ == 0 && q == 0) {
      owned_.copy_(part);  // shard 0: the sum starts as its gradient, not as 0 + it
    } else {
      owned_.add_(part);
    }
  }
  ++done_;
  mine_ = torch::Tensor();
  if (!keep_buffer_) received_ = torch::Tensor();
}

ParameterBlockSquares::ParameterBlockSquares(const std::vector<int64_t>& numels) {
  int64_t blocks = 0;
  for (int64_t n : numels) {
    first_block_.push_back(blocks);
    blocks += (n + kBlock - 1) / kBlock;
  }
  blocks_.assign(static_cast<size_t>(blocks), 0.0);
}

void ParameterBlockSquares::add(size_t param, int64_t first, const torch::Tensor& values) {
  TORCH_INTERNAL_ASSERT(first % kBlock == 0 && param < first_block_.size());
  const torch::Tensor host = values.reshape({-1}).cpu().contiguous();
  const int64_t n = host.numel();
  double* out = blocks_.data() + first_block_[param] + first / kBlock;
  AT_DISPATCH_FLOATING_TYPES_AND2(
      torch::kBFloat16, torch::kHalf, host.scalar_type(), "block_squares", [&] {
        const scalar_t* x = host.data_ptr<scalar_t>();
        for (int64_t b = 0; b * kBlock < n; ++b) {
          double sum = 0;
          const int64_t end = std::min(n, (b + 1) * kBlock);
          for (int64_t i = b * kBlock; i < end; ++i) {
            const double v = static_cast<double>(static_cast<float>(x[i]));
            sum += v * v;
          }
          out[b] = sum;
        }
      });
}

double ParameterBlockSquares::norm(ProcessGroup* group) {
  sum_over(group);
  double total = 0;
  for (double b : blocks_) total += b;  // in block order
  std::fill(blocks_.begin(), blocks_.end(), 0.0);
  return std::sqrt(total);
}

void ParameterBlockSquares::sum_over(ProcessGroup* group) {
  if (group != nullptr && group->world_size() > 1 && !blocks_.empty()) {
    std::vector<torch::Tensor> t{
        torch::from_blob(blocks_.data(), {static_cast<int64_t>(blocks_.size())}, torch::kFloat64)
            .to(group->device())};
    group->all_reduce_sum(t);
    const torch::Tensor host = t[0].cpu();
    std::copy(host.data_ptr<double>(), host.data_ptr<double>() + host.numel(), blocks_.begin());
  }
}

void ShardOrderedLoss::agree(ProcessGroup* group) {
  agreed_.reset();
  if (shares_.empty()) return;
  const MicroShardLayout layout(0, micro_shards_, group ? group->world_size() : 1,
                                group ? group->rank() : 0);
  std::vector<std::vector<double>> mine;
  for (double s : shares_) mine.push_back({s});
  shares_.clear();
  agreed_ = sum_in_shard_order(group, layout, mine)[0];
}

StepDecision ShardOrderedLoss::applied_to(StepDecision d) const {
  if (agreed_) d.loss = *agreed_;
  return d;
}

int64_t ShardOrderedReduce::bytes_sent_per_micro_step() const {
  return (layout_.world_size() - 1) * layout_.owned_numel() *
         static_cast<int64_t>(owned_.element_size());
}

std::vector<double> sum_in_shard_order(ProcessGroup* group, const MicroShardLayout& layout,
                                       const std::vector<std::vector<double>>& mine) {
  const int steps = layout.micro_steps();
  const int world = layout.world_size();
  TORCH_INTERNAL_ASSERT(static_cast<int>(mine.size()) == steps);
  const size_t k = mine[0].size();
  if (k == 0) return {};
  torch::Tensor local = torch::empty({steps * static_cast<int64_t>(k)}, torch::kFloat64);
  for (int i = 0; i < steps; ++i) {
    TORCH_INTERNAL_ASSERT(mine[size_t(i)].size() == k);
    std::copy(mine[size_t(i)].begin(), mine[size_t(i)].end(),
              local.data_ptr<double>() + size_t(i) * k);
  }
  torch::Tensor all = local;  // rank q's values for shard shard_at(i, q) at (q x steps + i) x k
  if (world > 1) {
    TORCH_INTERNAL_ASSERT(group != nullptr);
    torch::Tensor every = torch::empty(
        {world * local.numel()}, torch::TensorOptions(torch::kFloat64).device(group->device()));
    group->all_gather_shards(every, local.to(group->device()));
    all = every.cpu();
  }
  const double* v = all.data_ptr<double>();
  std::vector<double> sums(k);
  for (int s = 0; s < layout.micro_shards(); ++s) {
    const double* values = v + (size_t(s % world) * size_t(steps) + size_t(s / world)) * k;
    for (size_t j = 0; j < k; ++j) sums[j] = s == 0 ? values[j] : sums[j] + values[j];
  }
  return sums;
}

void gather_owned(ProcessGroup& group, const MicroShardLayout& layout, torch::Tensor& flat) {
  TORCH_INTERNAL_ASSERT(flat.dim() == 1 && flat.is_contiguous() &&
                        flat.numel() == layout.padded_numel());
  if (layout.world_size() == 1) return;
  torch::NoGradGuard no_grad;
  group.all_gather_shards(flat, flat.narrow(0, layout.owned_offset(), layout.owned_numel()));
}

}  // namespace unitrain
