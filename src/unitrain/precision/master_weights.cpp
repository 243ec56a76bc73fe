#include "unitrain/precision/master_weights.h"

#include <torch/torch.h>

#include <map>
#include <unordered_map>

#include "unitrain/core/error.h"

namespace unitrain {

MasterWeights::MasterWeights(torch::nn::Module& module, c10::ScalarType low)
    : module_(module), low_(low) {
  torch::NoGradGuard no_grad;
  for (const auto& named : module.named_parameters(/*recurse=*/true)) {
    torch::Tensor p = named.value();
    if (!p.is_floating_point()) {
      master_index_.push_back(-1);
      continue;
    }
    master_index_.push_back(static_cast<int>(masters_.size()));
    torch::Tensor master = p.detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
    master.set_requires_grad(p.requires_grad());
    masters_.push_back(master);
    params_.push_back(p);
    p.set_data(p.detach().to(low));  // the module's own tensor, now in `low`
  }
  for (const auto& named : module.named_buffers(/*recurse=*/true)) {
    torch::Tensor b = named.value();
    if (b.is_floating_point()) b.set_data(b.detach().to(low));
  }
}

void MasterWeights::adopt(torch::optim::Optimizer& optimizer) {
  UT_CHECK(optimizer.state().empty(),
           "bf16-true: the optimizer must get its float32 master "
           "weights before its first step");
  std::unordered_map<const void*, size_t> index;
  for (size_t i = 0; i < params_.size(); ++i) index[params_[i].unsafeGetTensorImpl()] = i;
  for (auto& group : optimizer.param_groups()) {
    for (torch::Tensor& t : group.params()) {
      auto it = index.find(t.unsafeGetTensorImpl());
      UT_CHECK(it != index.end() || !t.is_floating_point(),
               "train.precision: bf16-true needs an optimizer over the model's own parameters; "
               "it holds a tensor of shape ",
               t.sizes(), " that is not one of them");
      if (it != index.end()) t = masters_[it->second];
    }
  }
}

void MasterWeights::gradients_to_masters() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    torch::Tensor& wide = masters_[i].mutable_grad();
    if (!g.defined()) {
      wide = torch::Tensor();
    } else if (!wide.defined()) {
      wide = g.detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
    } else {
      wide.copy_(g);  // widened again (a skipped step kept them)
    }
  }
}

void MasterWeights::release_master_gradients() {
  for (auto& m : masters_) m.mutable_grad() = torch::Tensor();
}

void MasterWeights::masters_to_model() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].copy_(masters_[i]);
}

void MasterWeights::shard(const std::vector<torch::Tensor>& shards,
                          const std::vector<torch::Tensor>& masters) {
  TORCH_INTERNAL_ASSERT(shards.size() == masters.size());
  params_.clear();
  masters_.clear();
  master_index_.clear();
  shard_masters_ = masters;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!masters[i].defined()) continue;
    torch::Tensor master = masters[i];
    master.set_requires_grad(shards[i].requires_grad());
    params_.push_back(shards[i]);
    masters_.push_back(master);
  }
  sharded_ = true;
}

MasterWeights::Named MasterWeights::parameters() const {
  TORCH_INTERNAL_ASSERT(!sharded_, "MasterWeights::parameters() after shard()");
  Named out;
  size_t k = 0;
  for (const auto& named : module_.named_parameters(/*recurse=*/true)) {
    const int m = master_index_.at(k++);
    out.emplace_back(named.key(), m < 0 ? named.value().detach() : masters_[m]);
  }
  return out;
}

MasterWeights::Named MasterWeights::buffers() const {
  TORCH_INTERNAL_ASSERT(!sharded_, "MasterWeights::buffers() after shard()");
  Named out;
  for (const auto& named : module_.named_buffers(/*recurse=*/true)) {
    const torch::Tensor b = named.value().detach();
    out.emplace_back(named.key(), b.is_floating_point() ? b.to(torch::kFloat32, false, true) : b);
  }
  return out;
}

void MasterWeights::load(const Named& state) {
  TORCH_INTERNAL_ASSERT(!sharded_, "MasterWeights::load() after shard()");
  std::map<std::string, torch::Tensor> by_name(state.begin(), state.end());
  torch::NoGradGuard no_grad;
  size_t k = 0;
  for (const auto& named : module_.named_parameters(/*recurse=*/true)) {
    const int m = master_index_.at(k++);
    auto it = by_name.find(named.key());
    if (m >= 0 && it != by_name.end()) masters_[m].copy_(it->second);
  }
  masters_to_model();
  for (const auto& named : module_.named_buffers(/*recurse=*/true)) {
    auto it = by_name.find(named.key());
    if (it != by_name.end()) named.value().copy_(it->second);
  }
}

}  // namespace unitrain
