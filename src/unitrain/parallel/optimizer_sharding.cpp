#include "unitrain/parallel/optimizer_sharding.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <utility>

#include "unitrain/compat/optimizer_state_key.h"
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

namespace {

/// Sharded state is saved and merged parameter by parameter: the optimizer needs a serializer.
void require_state_by_parameter(const torch::optim::Optimizer& optimizer, int stage) {
  UT_CHECK(optimizer_state_serializers::find(optimizer) != nullptr, "distributed.zero: ", stage,
           " needs an optimizer whose state unitrain saves parameter by parameter (sgd, adam, "
           "adamw, adagrad, rmsprop, or one that registers an OptimizerStateSerializer); use "
           "distributed.zero: 0 with this one");
}

}  // namespace

OptimizerSharding::OptimizerSharding(std::shared_ptr<ProcessGroup> group,
                                     torch::optim::Optimizer& optimizer)
    : group_(std::move(group)), optimizer_(optimizer) {
  require_state_by_parameter(optimizer, 1);
  std::vector<int64_t> sizes;
  for (const auto& g : optimizer_.param_groups()) {
    for (const auto& p : g.params()) {
      params_.push_back(p);
      sizes.push_back(p.numel());
    }
  }
  owners_ = partition_by_size(sizes, group_->world_size());
  drop_foreign_state();
}

OptimizerSharding::OptimizerSharding(std::shared_ptr<ProcessGroup> group,
                                     torch::optim::Optimizer& optimizer,
                                     const std::vector<torch::Tensor>& params,
                                     const std::vector<int>& owners, int zero)
    : group_(std::move(group)), optimizer_(optimizer) {
  require_state_by_parameter(optimizer, zero);
  std::map<const void*, int> owner_of;
  for (size_t i = 0; i < params.size(); ++i) owner_of[params[i].unsafeGetTensorImpl()] = owners[i];
  for (const auto& g : optimizer_.param_groups()) {
    for (const auto& p : g.params()) {
      auto it = owner_of.find(p.unsafeGetTensorImpl());
      UT_CHECK_TRAIN(it != owner_of.end(), "distributed.zero: ", zero,
                     ": the optimizer trains a tensor of shape ", p.sizes(),
                     " that is not a parameter of the model");
      params_.push_back(p);
      owners_.push_back(it->second);
    }
  }
  drop_foreign_state();
}

OptimizerSharding::~OptimizerSharding() = default;

int OptimizerSharding::rank() const { return group_->rank(); }

void OptimizerSharding::drop_foreign_state() {
  auto& state = optimizer_.state();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] != rank()) state.erase(optimizer_state_key(params_[i]));
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

  // Every parameter from its owner, in place: on Gloo one broadcast each, no buffer beside the
  // parameters (which would cost what sharding saves); on NCCL one all-gather per dtype through
  // a buffer of the parameters' size. Non-contiguous ones travel as contiguous copies.
  // (Owner -1: another pipeline stage's parameter, not here.)
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  std::vector<int> owners;
  std::vector<size_t> index;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] < 0) continue;
    const torch::Tensor& p = params_[i];
    tensors.push_back(p.is_contiguous() ? p : p.contiguous());
    owners.push_back(owners_[i]);
    index.push_back(i);
  }
  group_->from_owners(tensors, owners);
  for (size_t j = 0; j < index.size(); ++j) {
    if (!tensors[j].is_same(params_[index[j]])) params_[index[j]].copy_(tensors[j]);
  }
}

}  // namespace unitrain
