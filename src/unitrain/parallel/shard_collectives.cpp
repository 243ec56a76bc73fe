// ProcessGroup::all_gather_shards, reduce_scatter_sum and all_to_all: the collectives over flat
// shards (each rank one equal part of a padded flat buffer) of ZeRO stage 3 and of
// distributed.reproducible.
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "unitrain/parallel/process_group.h"

namespace unitrain {

void ProcessGroup::all_gather_shards(torch::Tensor& full, const torch::Tensor& shard) {
  start_all_gather_shards(full, shard)();
}

std::function<void()> ProcessGroup::start_all_gather_shards(torch::Tensor& full,
                                                            const torch::Tensor& shard) {
  const int64_t n = shard.numel();
  TORCH_INTERNAL_ASSERT(shard.dim() == 1 && full.dim() == 1 && full.is_contiguous() &&
                        full.numel() == n * world_size_);
  torch::NoGradGuard no_grad;
  const bool widen = needs_widening(shard.scalar_type());
  const int64_t seq =
      flight_.begin("all_gather", 1, full.numel() * static_cast<int64_t>(full.element_size()));
  // Gloo has no bfloat16: the gather runs on float32 copies.
  torch::Tensor into =
      widen ? torch::empty({full.numel()}, full.options().dtype(torch::kFloat32)) : full;
  std::vector<torch::Tensor> in{widen ? shard.to(torch::kFloat32) : shard.contiguous()};
  c10::intrusive_ptr<c10d::Work> work;
  try {
    if (is_nccl()) {
      work = group_->_allgather_base(into, in[0]);
    } else {
      std::vector<std::vector<torch::Tensor>> out(1);
      for (int r = 0; r < world_size_; ++r) out[0].push_back(into.narrow(0, r * n, n));
      work = group_->allgather(out, in);
    }
  } catch (const std::exception& e) {
    collective_failed(seq, e);
  }
  // The input copy and the (widened) output live in the closure until the wait.
  return [this, seq, work, widen, into, in, full]() mutable {
    try {
      work->wait();
    } catch (const std::exception& e) {
      collective_failed(seq, e);
    }
    flight_.end(seq);
    torch::NoGradGuard no_grad;
    if (widen) full.copy_(into);
  };
}

void ProcessGroup::reduce_scatter_sum(torch::Tensor& shard, torch::Tensor& full,
                                      ReduceScatterBy by) {
  const int64_t n = shard.numel();
  TORCH_INTERNAL_ASSERT(shard.dim() == 1 && full.dim() == 1 && full.is_contiguous() &&
                        full.numel() == n * world_size_);
  torch::NoGradGuard no_grad;
  const bool widen = needs_widening(full.scalar_type());
  wait("reduce_scatter", 1, full.numel() * static_cast<int64_t>(full.element_size()), [&] {
    torch::Tensor whole = widen ? full.to(torch::kFloat32) : full;
    if (is_nccl()) {
      torch::Tensor part = widen ? torch::empty({n}, whole.options()) : shard;
      group_->_reduce_scatter_base(part, whole)->wait();
      if (widen) shard.copy_(part);
      return;
    }
    if (by == ReduceScatterBy::AllReduce) {
      std::vector<torch::Tensor> all{whole};
      group_->allreduce(all)->wait();
    } else {
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (int r = 0; r < world_size_; ++r) {
        std::vector<torch::Tensor> part{whole.narrow(0, r * n, n)};
        c10d::ReduceOptions options;
        options.rootRank = r;
        works.push_back(group_->reduce(part, options));
      }
      for (auto& w : works) w->wait();
    }
    shard.copy_(whole.narrow(0, rank_ * n, n));
  });
}

void ProcessGroup::all_to_all(torch::Tensor& output, const torch::Tensor& input) {
  start_all_to_all(output, input)();
}

std::function<void()> ProcessGroup::start_all_to_all(torch::Tensor& output,
                                                     const torch::Tensor& input) {
  TORCH_INTERNAL_ASSERT(input.dim() == 1 && output.dim() == 1 && output.is_contiguous() &&
                        input.numel() == output.numel() && input.numel() % world_size_ == 0 &&
                        input.scalar_type() == output.scalar_type());
  torch::NoGradGuard no_grad;
  // Gloo has no bfloat16; an exchange adds nothing, so its bits travel as float16's.
  const auto carried = needs_widening(input.scalar_type()) ? torch::kHalf : input.scalar_type();
  const int64_t seq =
      flight_.begin("all_to_all", 1, input.numel() * static_cast<int64_t>(input.element_size()));
  // A tensor elsewhere than the group's device travels as a copy made there.
  torch::Tensor out = output.device() == device_
                          ? output
                          : torch::empty({output.numel()}, output.options().device(device_));
  torch::Tensor in = input.to(device_).contiguous();
  torch::Tensor out_carried = out.view(carried);
  torch::Tensor in_carried = in.view(carried);
  std::vector<int64_t> equal_parts;  // empty: world equal parts
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = group_->alltoall_base(out_carried, in_carried, equal_parts, equal_parts);
  } catch (const std::exception& e) {
    collective_failed(seq, e);
  }
  // The copies live in the closure until the wait.
  return [this, seq, work, out, in, output]() mutable {
    try {
      work->wait();
    } catch (const std::exception& e) {
      collective_failed(seq, e);
    }
    flight_.end(seq);
    if (!out.is_same(output)) output.copy_(out);
  };
}

}  // namespace unitrain
