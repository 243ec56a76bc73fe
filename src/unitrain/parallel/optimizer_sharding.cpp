#include "unitrain/parallel/optimizer_sharding.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <utility>

#include "unitrain/core/error.h"
#include "unitrain/core/optimizer_state_serializer.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

std::vector<int> partition_by_size(const std::vector<int64_t>& sizes, int world) {
  std::vector<int> owners;
  std::vector<int64_t> load(static_cast<size_t>(std::max(world, 1)), 0);
  for (int64_t n : sizes) {
    const auto least = std::min_element(load.begin(), load.end());  // the first of equals
    *least += n;
    owners.push_back(static_cast<int>(least - load.begin()));
  }
  return owners;
}

OptimizerSharding::OptimizerSharding(std::shared_ptr<ProcessGroup> group,
                                     torch::optim::Optimizer& optimizer)
    : group_(std::move(group)), optimizer_(optimizer) {
  UT_CHECK(optimizer_state_serializers::find(optimizer) != nullptr,
           "distributed.zero: 1 needs an optimizer whose state unitrain saves parameter by "
           "parameter (sgd, adam, adamw, adagrad, rmsprop, or one that registers an "
           "OptimizerStateSerializer); use distributed.zero: 0 with this one");
  std::vector<int64_t> sizes;
  for (const auto& g : optimizer_.param_groups()) {
    for (const auto& p : g.params()) {
      params_.push_back(p);
      sizes.push_back(p.numel());
    }
  }
  owners_ = partition_by_size(sizes, group_->world_size());
  // One slot per (owner, dtype), numbered in order of first appearance: the same on every
  // rank (the same parameter list), so the broadcasts match.
  std::map<std::pair<int, int>, size_t> slot_of;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto key = std::make_pair(owners_[i], static_cast<int>(params_[i].scalar_type()));
    auto [it, added] = slot_of.emplace(key, 0);
    if (added) it->second = slot_of.size() - 1;
  }
  slots_.resize(slot_of.size());
  std::vector<int64_t> numel(slots_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto key = std::make_pair(owners_[i], static_cast<int>(params_[i].scalar_type()));
    const size_t s = slot_of.at(key);
    slots_[s].owner = owners_[i];
    slots_[s].members.push_back(i);
    numel[s] += params_[i].numel();
  }
  for (size_t s = 0; s < slots_.size(); ++s) {
    const torch::Tensor& first = params_[slots_[s].members.front()];
    slots_[s].flat = torch::empty({numel[s]}, first.options().requires_grad(false));
  }
  drop_foreign_state();
}

OptimizerSharding::~OptimizerSharding() = default;

int OptimizerSharding::rank() const { return group_->rank(); }

void OptimizerSharding::drop_foreign_state() {
  auto& state = optimizer_.state();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] != rank()) state.erase(c10::guts::to_string(params_[i].unsafeGetTensorImpl()));
  }
}

void OptimizerSharding::step() {
  // Other ranks' parameters take no step here: their gradients are put aside meanwhile.
  const int me = rank();
  std::vector<std::pair<size_t, torch::Tensor>> aside;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] != me && params_[i].grad().defined()) {
      aside.emplace_back(i, std::exchange(params_[i].mutable_grad(), torch::Tensor()));
    }
  }
  auto restore = [&] {
    for (auto& [i, grad] : aside) params_[i].mutable_grad() = std::move(grad);
  };
  try {
    optimizer_.step();
  } catch (...) {
    restore();
    throw;
  }
  restore();

  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flats;
  std::vector<int> roots;
  for (Slot& slot : slots_) {
    if (slot.owner == me) {
      int64_t offset = 0;
      for (size_t i : slot.members) {
        const int64_t n = params_[i].numel();
        slot.flat.narrow(0, offset, n).view(params_[i].sizes()).copy_(params_[i]);
        offset += n;
      }
    }
    flats.push_back(slot.flat);
    roots.push_back(slot.owner);
  }
  group_->broadcast_from(flats, roots);
  for (const Slot& slot : slots_) {
    if (slot.owner == me) continue;
    int64_t offset = 0;
    for (size_t i : slot.members) {
      const int64_t n = params_[i].numel();
      params_[i].copy_(slot.flat.narrow(0, offset, n).view(params_[i].sizes()));
      offset += n;
    }
  }
}

}  // namespace unitrain
