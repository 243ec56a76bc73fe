#include "unitrain/parallel/reproducible_sync.h"

#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {
namespace {

std::vector<torch::Tensor> trained(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

std::vector<int64_t> numels_of(const std::vector<torch::Tensor>& params) {
  std::vector<int64_t> out;
  for (const auto& p : params) out.push_back(p.numel());
  return out;
}

int64_t total_numel(const std::vector<torch::Tensor>& params) {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

c10::ScalarType one_dtype(const std::vector<torch::Tensor>& params) {
  UT_CHECK(!params.empty(), "distributed.reproducible: the model has no parameter that trains");
  const c10::ScalarType dtype = params[0].scalar_type();
  for (const auto& p : params) {
    UT_CHECK(p.scalar_type() == dtype, "distributed.reproducible: the parameters that train have ",
             "more than one dtype (", c10::toString(dtype), " and ", c10::toString(p.scalar_type()),
             "); their gradients are summed as one flat buffer");
  }
  return dtype;
}

ShardOrderedReduce make_reduce(const std::shared_ptr<ProcessGroup>& group,
                               const std::vector<torch::Tensor>& params, int micro_shards) {
  const int world = group ? group->world_size() : 1;
  const int rank = group ? group->rank() : 0;
  const MicroShardLayout layout(total_numel(params), micro_shards, world, rank);
  const c10::ScalarType dtype = one_dtype(params);
  if (group) return ShardOrderedReduce(group, layout, dtype);
  return ShardOrderedReduce(layout, dtype, params[0].device());
}

}  // namespace

ReproducibleSync::ReproducibleSync(std::shared_ptr<ProcessGroup> group,
                                   const std::vector<torch::Tensor>& params, int micro_shards)
    : group_(std::move(group)),
      params_(trained(params)),
      reduce_(make_reduce(group_, params_, micro_shards)),
      used_(params_.size(), 0.f),
      loss_(micro_shards),
      squares_(numels_of(params_)) {
  int64_t offset = 0;
  for (const auto& p : params_) {
    offsets_.push_back(offset);
    offset += p.numel();
  }
  flat_ = torch::zeros({layout().padded_numel()}, params_[0].options().requires_grad(false));
}

ReproducibleSync::~ReproducibleSync() = default;

void ReproducibleSync::before_backward(bool) {
  // Each shard's gradient from none: what its backward alone writes, not added to the last.
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

void ReproducibleSync::after_backward() {
  torch::NoGradGuard no_grad;
  // The last micro-shard's exchange ran while this one computed: its adds first, then flat_
  // is free for this one's gradient.
  if (reduce_.in_flight()) reduce_.finish_add();
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor slot = flat_.narrow(0, offsets_[i], params_[i].numel());
    torch::Tensor& grad = params_[i].mutable_grad();
    if (grad.defined()) {
      slot.copy_(grad.reshape({-1}));
      used_[i] = 1.f;
      grad = torch::Tensor();
    } else {
      slot.zero_();
    }
  }
  const int64_t n = layout().numel();
  if (layout().padded_numel() > n) flat_.narrow(0, n, layout().padded_numel() - n).zero_();
  reduce_.start(flat_);  // (finished by the next micro-shard, or by finish())
}

void ReproducibleSync::share(const StepDecision& mine, const torch::Tensor& nonfinite_on_device) {
  mine_ = mine.encode();
  nonfinite_flag_ = nonfinite_on_device;
}

void ReproducibleSync::agree_with_used() {
  const auto slots = static_cast<int64_t>(mine_.size());
  torch::Tensor all = torch::empty({slots + static_cast<int64_t>(used_.size())}, torch::kFloat32);
  std::copy(mine_.begin(), mine_.end(), all.data_ptr<float>());
  std::copy(used_.begin(), used_.end(), all.data_ptr<float>() + slots);
  const torch::Device device = group_ ? group_->device() : flat_.device();
  all = all.to(device);
  if (nonfinite_flag_.defined()) {  // the device's flag joins slot 0 there (no host read)
    torch::Tensor first = all.narrow(0, 0, 1);
    first.copy_(first.to(torch::kBool).logical_or(nonfinite_flag_.reshape({1})));
  }
  if (group_) {
    std::vector<torch::Tensor> t{all};
    group_->all_reduce_sum(t);
    all = t[0];
  }
  all = all.cpu();
  const float* v = all.data_ptr<float>();
  std::copy(v, v + slots, agreed_.begin());
  used_by_any_.assign(used_.size(), false);
  for (size_t i = 0; i < used_.size(); ++i) used_by_any_[i] = v[slots + int64_t(i)] > 0;
  mine_.fill(0.f);
  std::fill(used_.begin(), used_.end(), 0.f);
  nonfinite_flag_ = torch::Tensor();
  loss_.agree(group_.get());
}

void ReproducibleSync::agree() { agree_with_used(); }

void ReproducibleSync::finish(const std::vector<torch::Tensor>&) {
  if (reduce_.in_flight()) reduce_.finish_add();
  TORCH_INTERNAL_ASSERT(reduce_.complete(), "distributed.reproducible: a window of ",
                        reduce_.micro_steps_done(), " micro-steps, not ", layout().micro_steps());
  agree_with_used();
  torch::NoGradGuard no_grad;
  flat_.narrow(0, layout().owned_offset(), layout().owned_numel()).copy_(reduce_.owned_gradient());
  if (group_) gather_owned(*group_, layout(), flat_);
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].mutable_grad() =
        used_by_any_[i] ? flat_.narrow(0, offsets_[i], params_[i].numel()).view(params_[i].sizes())
                        : torch::Tensor();
  }
}

double ReproducibleSync::norm() {
  if (measure_) return measure_();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].grad().defined()) squares_.add(i, 0, params_[i].grad());
  }
  return squares_.norm(nullptr);
}

}  // namespace unitrain
