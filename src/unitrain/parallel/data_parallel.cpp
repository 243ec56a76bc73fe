#include "unitrain/parallel/data_parallel.h"

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <sstream>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {

std::vector<int> partition_contiguous(const std::vector<int64_t>& sizes, int world) {
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  std::vector<int> owners;
  int64_t before = 0;
  for (int64_t n : sizes) {
    // The rank whose share [r, r + 1) * total / world holds this parameter's middle.
    const double middle = (static_cast<double>(before) + 0.5 * static_cast<double>(n)) * world;
    const int r = total == 0 ? 0 : static_cast<int>(middle / static_cast<double>(total));
    owners.push_back(std::min(std::max(r, owners.empty() ? 0 : owners.back()), world - 1));
    before += n;
  }
  return owners;
}

std::vector<int> bucket_owners(const std::vector<torch::Tensor>& params, int world) {
  std::vector<int64_t> sizes;
  for (const auto& p : params) sizes.push_back(p.numel());
  return bucket_owners(params, world, sizes);
}

std::vector<int> bucket_owners(const std::vector<torch::Tensor>& params, int world,
                               const std::vector<int64_t>& sizes) {
  std::vector<int64_t> reversed_sizes;  // reverse order, as the buckets take them
  for (size_t k = params.size(); k-- > 0;) {
    reversed_sizes.push_back(params[k].requires_grad() ? sizes[k] : 0);
  }
  const std::vector<int> reversed = partition_contiguous(reversed_sizes, world);
  return std::vector<int>(reversed.rbegin(), reversed.rend());
}

DataParallelSync::DataParallelSync(std::shared_ptr<ProcessGroup> group,
                                   std::vector<torch::Tensor> params, DataParallelOptions options)
    : group_(std::move(group)),
      params_(std::move(params)),
      options_(options),
      device_(params_.empty() ? group_->device() : params_.front().device()) {
  UT_CHECK(options_.bucket_mb > 0, "distributed.bucket_mb must be positive, got ",
           options_.bucket_mb);
  const bool partitioned = !options_.owners.empty();
  UT_CHECK_TRAIN(!partitioned || options_.owners.size() == params_.size(),
                 "data parallel: ", options_.owners.size(), " owners for ", params_.size(),
                 " parameters");
  bucket_of_.assign(params_.size(), 0);
  has_grad_.assign(params_.size(), false);
  touched_.assign(params_.size(), false);
  lay_out_buckets();
  hook_gradients();
}

void DataParallelSync::lay_out_buckets() {
  const bool partitioned = !options_.owners.empty();
  const int64_t bucket_bytes = std::max<int64_t>(1, int64_t(options_.bucket_mb * 1024 * 1024));
  // The first bucket (the last layers, whose gradients come first) is small, as in PyTorch's
  // DDP, so that its reduce starts early in backward instead of waiting for 25 MB.
  const int64_t first_bucket_bytes = std::min<int64_t>(bucket_bytes, 1024 * 1024);
  // Reverse order: the last layers' gradients come first in backward. A bucket holds one dtype.
  Bucket current;
  int64_t bytes = 0;
  torch::ScalarType dtype = torch::kFloat;
  int owner = -1;
  auto close = [&] {
    if (current.members.empty()) return;
    int64_t numel = 0;
    for (size_t i : current.members) {
      current.offsets.push_back(numel);
      numel += params_[i].numel();
    }
    current.numel = numel;
    current.owner = owner;
    // A bucket another rank owns has a buffer only while its reduce is under way.
    if (owner < 0 || owner == group_->rank()) {
      current.flat =
          torch::zeros({numel}, params_[current.members[0]].options().requires_grad(false));
    }
    buckets_.push_back(std::move(current));
    current = Bucket();
    bytes = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    const torch::Tensor& p = params_[k];
    if (!p.requires_grad()) continue;
    const int64_t limit = buckets_.empty() ? first_bucket_bytes : bucket_bytes;
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    const int p_owner = partitioned ? options_.owners[k] : -1;
    if (!current.members.empty() &&
        (p.scalar_type() != dtype || bytes + size > limit || p_owner != owner)) {
      close();
    }
    dtype = p.scalar_type();
    owner = p_owner;
    bucket_of_[k] = buckets_.size();
    current.members.push_back(k);
    bytes += size;
  }
  close();
  add_decision_slots();
}

void DataParallelSync::add_decision_slots() {
  if (!options_.owners.empty()) {
    decision_ = torch::zeros({kFlagSlots}, torch::TensorOptions(torch::kFloat32).device(device_));
  } else {
    // The decision rides behind the last bucket's gradients (a bucket of their own when there
    // are no gradients at all).
    if (buckets_.empty()) {
      buckets_.push_back(
          Bucket{{}, {}, torch::zeros({0}, torch::TensorOptions(device_)), {}, 0, {}});
    }
    Bucket& last = buckets_.back();
    last.flat = torch::cat({last.flat, torch::zeros({kFlagSlots}, last.flat.options())});
    last.numel = last.flat.numel();
  }
  for (auto& b : buckets_) {
    if (b.flat.defined() && group_->needs_widening(b.flat.scalar_type())) {
      b.wide = torch::zeros_like(b.flat, torch::kFloat32);
    }
  }
}

void DataParallelSync::hook_gradients() {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].requires_grad()) continue;
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    UT_CHECK_TRAIN(acc != nullptr, "data parallel: parameter ", k, " has no gradient accumulator");
    hook_keys_.push_back(
        acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, k](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              grad_ready(k);
              return outputs;
            })));
    accumulators_.push_back(std::move(acc));
  }
}

DataParallelSync::~DataParallelSync() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
  for (auto& b : buckets_) {
    if (b.work) {
      try {
        b.work->wait();
      } catch (...) {  // the group is failing; nothing to reduce any more
      }
    }
  }
}

void DataParallelSync::before_backward(bool will_step) { active_ = will_step; }

void DataParallelSync::grad_ready(size_t param) {
  touched_[param] = true;
  if (!active_ || has_grad_[param]) return;
  has_grad_[param] = true;
  Bucket& b = buckets_[bucket_of_[param]];
  if (++b.ready == b.members.size()) launch_in_order();
}

void DataParallelSync::write_decision(torch::Tensor slots) const {
  slots.copy_(torch::tensor(std::vector<float>(mine_.begin(), mine_.end()), torch::kFloat32));
  // The device's flag goes in on the device (no host read): slot 0 is then 1 when either says so.
  if (nonfinite_flag_.defined()) {
    torch::Tensor first = slots.narrow(0, 0, 1);
    first.copy_(first.to(torch::kBool).logical_or(nonfinite_flag_.reshape({1})));
  }
}

void DataParallelSync::launch(Bucket& bucket, const char* phase) {
  torch::NoGradGuard no_grad;
  const bool mine = bucket.owner < 0 || bucket.owner == group_->rank();
  if (!bucket.flat.defined()) {
    bucket.flat =
        torch::empty({bucket.numel}, params_[bucket.members[0]].options().requires_grad(false));
  }
  if (!decision_.defined() && &bucket == &buckets_.back()) {
    write_decision(bucket.flat.narrow(0, bucket.flat.numel() - kFlagSlots, kFlagSlots));
  }
  for (size_t j = 0; j < bucket.members.size(); ++j) {
    const torch::Tensor& p = params_[bucket.members[j]];
    torch::Tensor slot = bucket.flat.narrow(0, bucket.offsets[j], p.numel());
    if (!p.grad().defined()) {
      slot.zero_();
    } else if (p.grad().data_ptr() != slot.data_ptr()) {  // not (yet) a view of the bucket
      slot.copy_(p.grad().reshape({-1}));
    }
  }
  if (bucket.wide.defined()) bucket.wide.copy_(bucket.flat);
  std::vector<torch::Tensor> tensors{bucket.wide.defined() ? bucket.wide : bucket.flat};
  bucket.seq =
      group_->record_launch(bucket.owner < 0 ? "all_reduce" : "reduce", 1,
                            tensors[0].numel() * static_cast<int64_t>(tensors[0].element_size()),
                            static_cast<int32_t>(&bucket - buckets_.data()), phase);
  if (bucket.owner < 0) {
    bucket.work = group_->group().allreduce(tensors);
    return;
  }
  if (!mine) {  // its owner alone keeps the sum: this rank's copies go now
    for (size_t i : bucket.members) params_[i].mutable_grad() = torch::Tensor();
  }
  c10d::ReduceOptions o;
  o.rootRank = bucket.owner;
  bucket.work = group_->group().reduce(tensors, o);
}

void DataParallelSync::launch_in_order() {
  while (next_launch_ < buckets_.size() &&
         buckets_[next_launch_].ready == buckets_[next_launch_].members.size()) {
    launch(buckets_[next_launch_++], "backward");
    ++launched_in_backward_;
  }
}

void DataParallelSync::wait_for_buckets() {
  const double world = group_->world_size();
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_) {
    try {
      b.work->wait();
    } catch (const std::exception& e) {
      b.work.reset();
      group_->collective_failed(b.seq, e);
    }
    b.work.reset();
    group_->record_done(b.seq);
    if (b.owner >= 0 && b.owner != group_->rank()) {  // another rank's: nothing kept here
      b.flat = torch::Tensor();
      for (size_t i : b.members) params_[i].mutable_grad() = torch::Tensor();
      b.ready = 0;
      continue;
    }
    if (b.wide.defined()) b.flat.copy_(b.wide);  // the sum, rounded once
    if (!decision_.defined() && &b == &buckets_.back()) {
      torch::Tensor tail = b.flat.narrow(0, b.flat.numel() - kFlagSlots, kFlagSlots);
      torch::Tensor f = tail.to(torch::kCPU, torch::kFloat32).contiguous();  // the one host read
      std::copy(f.data_ptr<float>(), f.data_ptr<float>() + kFlagSlots, agreed_.begin());
    }
    if (options_.average) b.flat.div_(world);
    b.ready = 0;
  }
}

c10::intrusive_ptr<c10d::Work> DataParallelSync::launch_decision(torch::Tensor& slots,
                                                                 int64_t& seq) {
  std::vector<torch::Tensor> t{slots};
  seq = group_->record_launch("all_reduce", 1, kFlagSlots * 4);
  return group_->group().allreduce(t);
}

void DataParallelSync::wait_for_decision(c10d::Work& work, int64_t seq,
                                         const torch::Tensor& slots) {
  try {
    work.wait();
  } catch (const std::exception& e) {
    group_->collective_failed(seq, e);
  }
  group_->record_done(seq);
  const torch::Tensor host = slots.cpu();  // the one host read
  std::copy(host.data_ptr<float>(), host.data_ptr<float>() + kFlagSlots, agreed_.begin());
}

bool DataParallelSync::missing_here() const {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k].requires_grad() && !touched_[k]) return true;
  }
  return false;
}

void DataParallelSync::finish(const std::vector<torch::Tensor>&) {
  // Buckets with a parameter that got no gradient in this backward go now, in order. (When
  // every bucket went during backward, every parameter had its gradient.)
  if (next_launch_ < buckets_.size() && missing_here()) {
    StepDecision mine = StepDecision::decode(mine_.data());
    mine.missing_gradient = true;
    mine_ = mine.encode();
  }
  while (next_launch_ < buckets_.size()) {
    launch(buckets_[next_launch_++], nullptr);
    ++launched_in_finish_;
  }
  c10::intrusive_ptr<c10d::Work> decision_work;
  int64_t decision_seq = -1;
  if (decision_.defined()) {  // ZeRO stage 2: after the buckets, on every rank
    write_decision(decision_);
    decision_work = launch_decision(decision_, decision_seq);
  }
  wait_for_buckets();
  if (decision_work) wait_for_decision(*decision_work, decision_seq, decision_);
  std::vector<bool> used(params_.size(), true);
  if (agreed().missing_gradient) used = used_by_any_rank();
  give_gradients(used);
  std::fill(has_grad_.begin(), has_grad_.end(), false);
  std::fill(touched_.begin(), touched_.end(), false);
  mine_.fill(0.f);
  nonfinite_flag_ = torch::Tensor();
  next_launch_ = 0;
  active_ = false;
}

std::vector<bool> DataParallelSync::used_by_any_rank() {
  // Made on the host and read there: the group reduces a copy on its device.
  torch::Tensor flags = torch::zeros({static_cast<int64_t>(params_.size())}, torch::kUInt8);
  auto* f = flags.data_ptr<uint8_t>();
  for (size_t k = 0; k < params_.size(); ++k) f[k] = touched_[k] ? 1 : 0;
  std::vector<torch::Tensor> t{flags};
  group_->all_reduce_max(t);
  std::vector<bool> used(params_.size());
  std::vector<std::string> unused;
  for (size_t k = 0; k < params_.size(); ++k) {
    used[k] = f[k] != 0 || !params_[k].requires_grad();
    if (!used[k]) {
      unused.push_back(k < options_.names.size() ? options_.names[k] : "#" + std::to_string(k));
    }
  }
  if (!unused.empty() && !options_.find_unused_parameters && !warned_unused_ &&
      group_->rank() == 0) {
    warned_unused_ = true;
    spdlog::warn(
        "data parallel: {} parameter(s) got no gradient on any rank in a step: {}; they get none "
        "(the optimizer skips them, as in one process). Set distributed.find_unused_parameters: "
        "true when the model leaves parameters out on purpose (this warning goes)",
        unused.size(), some_names(unused, 10));
  }
  return used;
}

void DataParallelSync::give_gradients(const std::vector<bool>& used) {
  for (auto& b : buckets_) {
    if (!b.flat.defined() || (b.owner >= 0 && b.owner != group_->rank())) continue;
    for (size_t j = 0; j < b.members.size(); ++j) {
      torch::Tensor& p = params_[b.members[j]];
      torch::Tensor avg = b.flat.narrow(0, b.offsets[j], p.numel()).view(p.sizes());
      if (!used[b.members[j]]) {
        // As in one process: no gradient (views: the zeros left by the last step's zeroing),
        // or the one it had (the module's own tensors, the same on every rank).
        if (options_.gradient_views) p.mutable_grad() = torch::Tensor();
        continue;
      }
      if (!options_.gradient_views) {
        p.mutable_grad() = avg.clone();
      } else if (!p.grad().defined() || p.grad().data_ptr() != avg.data_ptr()) {
        // The gradient becomes (or stays) a view of its slot: backward then accumulates
        // straight into the bucket, and the next reduce needs no copy in or out.
        p.mutable_grad() = avg;
      }
    }
  }
}

void DataParallelSync::agree() {
  torch::Tensor slots =
      torch::zeros({kFlagSlots}, torch::TensorOptions(torch::kFloat32).device(device_));
  write_decision(slots);
  int64_t seq = -1;
  c10::intrusive_ptr<c10d::Work> work = launch_decision(slots, seq);
  wait_for_decision(*work, seq, slots);
  mine_.fill(0.f);
  nonfinite_flag_ = torch::Tensor();
}

double DataParallelSync::sum_across_ranks(double local) { return group_->sum_of(local); }

}  // namespace unitrain
