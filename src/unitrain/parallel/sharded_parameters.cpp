#include "unitrain/parallel/sharded_parameters.h"

#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/core/unit_parts.h"

namespace unitrain {
void restore_kept_parts(ProcessGroup& group, const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (KeptFlat& flat : take_kept_flats(params)) {
    const int64_t n = flat.part.numel();
    torch::Tensor whole =
        torch::empty({n * flat.world}, flat.part.options().device(group.device()));
    group.all_gather_shards(whole, flat.part.to(group.device()));
    flat.part = torch::Tensor();
    for (size_t j = 0; j < flat.members.size(); ++j) {
      const torch::Tensor& p = flat.members[j];
      make_tensor_memory(p);
      p.detach().view({-1}).copy_(whole.narrow(0, flat.offsets[j], p.numel()));
    }
  }
}

/// The parameters of one unit, dtype, key and trainability, end to end.
struct ShardedParameters::Flat {
  int unit = 0, key = 0;
  c10::ScalarType dtype = c10::ScalarType::Float;
  bool trains = true;
  std::vector<size_t> members;   ///< indices into params_
  std::vector<int64_t> offsets;  ///< each member's first element in the flat
  int64_t length = 0;            ///< elements of the members
  int64_t part = 0;              ///< elements of each rank's shard (padded length / world)
  torch::Tensor whole;           ///< world x part elements; memory only while gathered
  size_t shard = 0;              ///< index into shards_
};

ShardedParameters::ShardedParameters(std::shared_ptr<ProcessGroup> group,
                                     std::vector<torch::Tensor> params,
                                     const std::vector<int>& unit_of,
                                     const std::vector<int>& key_of, std::vector<std::string> names,
                                     ProcessGroup::ReduceScatterBy reduce_by, int micro_shards)
    : group_(std::move(group)),
      params_(std::move(params)),
      names_(std::move(names)),
      reduce_by_(reduce_by),
      micro_shards_(micro_shards) {
  if (names_.empty()) {
    for (size_t i = 0; i < params_.size(); ++i) names_.push_back("param." + std::to_string(i));
  }
  TORCH_INTERNAL_ASSERT(unit_of.size() == params_.size() && key_of.size() == params_.size());
  const int world = group_->world_size(), rank = group_->rank();
  int units = 0;
  for (int u : unit_of) units = std::max(units, u + 1);
  unit_flats_.resize(static_cast<size_t>(units));
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i];
    std::vector<size_t>& mine = unit_flats_[static_cast<size_t>(unit_of[i])];
    auto it = std::find_if(mine.begin(), mine.end(), [&](size_t f) {
      const Flat& flat = *flats_[f];
      return flat.key == key_of[i] && flat.dtype == p.scalar_type() &&
             flat.trains == p.requires_grad();
    });
    if (it == mine.end()) {
      auto flat = std::make_unique<Flat>();
      flat->unit = unit_of[i];
      flat->key = key_of[i];
      flat->dtype = p.scalar_type();
      flat->trains = p.requires_grad();
      flats_.push_back(std::move(flat));
      mine.push_back(flats_.size() - 1);
      it = mine.end() - 1;
    }
    Flat& flat = *flats_[*it];
    flat.members.push_back(i);
    if (micro_shards_ > 0) {  // blocks of a member's gradient never straddle two parts
      constexpr int64_t align = MicroShardLayout::kChunkAlign;
      flat.length = (flat.length + align - 1) / align * align;
    }
    flat.offsets.push_back(flat.length);
    flat.length += p.numel();
  }
  torch::NoGradGuard no_grad;
  for (const auto& unit : unit_flats_) {
    std::vector<torch::Tensor> members;  // a model built in parts: the unit's values, gathered
    for (size_t f : unit) {
      for (size_t i : flats_[f]->members) members.push_back(params_[i]);
    }
    restore_kept_parts(*group_, members);
    for (size_t f : unit) {
      Flat& flat = *flats_[f];
      flat.part = (flat.length + world - 1) / world;
      if (micro_shards_ > 0) {
        const MicroShardLayout layout(flat.length, micro_shards_, world, rank);
        flat.part = layout.owned_numel();
        if (flat.trains) {
          ordered_.resize(flats_.size());
          ordered_[f] = std::make_unique<ShardOrderedReduce>(group_, layout, flat.dtype,
                                                             /*keep_buffer=*/false);
        }
      }
      const torch::Tensor& first = params_[flat.members[0]];
      flat.whole = torch::zeros({flat.part * world}, first.options().requires_grad(false));
      for (size_t j = 0; j < flat.members.size(); ++j) {
        torch::Tensor& p = params_[flat.members[j]];
        torch::Tensor place = flat.whole.narrow(0, flat.offsets[j], p.numel());
        place.copy_(p.detach().reshape({-1}));
        p.set_data(place.view(p.sizes()));
      }
      flat.shard = shards_.size();
      shards_.push_back(
          flat.whole.narrow(0, rank * flat.part, flat.part).clone().requires_grad_(flat.trains));
      give_memory(flat.whole);
    }
  }
  gathered_.assign(unit_flats_.size(), false);
  in_flight_.resize(unit_flats_.size());
}

ShardedParameters::~ShardedParameters() = default;

std::vector<int> ShardedParameters::shard_keys() const {
  std::vector<int> keys(shards_.size());
  for (const auto& flat : flats_) keys[flat->shard] = flat->key;
  return keys;
}

void ShardedParameters::gather(int unit) {
  const auto u = static_cast<size_t>(unit);
  if (gathered_[u]) return;
  if (in_flight_[u].empty()) prefetch(unit);
  for (auto& wait : in_flight_[u]) wait();
  in_flight_[u].clear();
  gathered_[u] = true;
}

void ShardedParameters::prefetch(int unit) {
  const auto u = static_cast<size_t>(unit);
  if (gathered_[u] || !in_flight_[u].empty()) return;
  for (size_t f : unit_flats_[u]) {
    Flat& flat = *flats_[f];
    take_memory(flat.whole);
    in_flight_[u].push_back(
        group_->start_all_gather_shards(flat.whole, shards_[flat.shard].detach()));
  }
}

void ShardedParameters::release(int unit) {
  const auto u = static_cast<size_t>(unit);
  for (auto& wait : in_flight_[u]) wait();  // nothing may still write into the memory
  in_flight_[u].clear();
  for (size_t f : unit_flats_[u]) give_memory(flats_[f]->whole);
  gathered_[u] = false;
}

at::DataPtr ShardedParameters::take_spare(size_t bytes, c10::Allocator* allocator) {
  for (auto it = spare_.begin(); it != spare_.end(); ++it) {
    if (it->first == bytes) {
      at::DataPtr out = std::move(it->second);
      spare_.erase(it);
      return out;
    }
  }
  return allocator->allocate(bytes);
}

void ShardedParameters::give_spare(size_t bytes, at::DataPtr memory) {
  if (spare_.size() == kSpares) spare_.erase(spare_.begin());  // the oldest goes
  spare_.emplace_back(bytes, std::move(memory));
}

void ShardedParameters::take_memory(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (s->nbytes() == bytes) return;
  s->set_data_ptr_noswap(take_spare(bytes, s->allocator()));
  s->set_nbytes(bytes);
}

void ShardedParameters::give_memory(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  const size_t bytes = s->nbytes();
  if (bytes == 0) return;
  give_spare(bytes, s->set_data_ptr(at::DataPtr(nullptr, s->device())));
  s->set_nbytes(0);
}

void ShardedParameters::release_all() {
  for (int u = 0; u < units(); ++u) {
    if (gathered(u) || !in_flight_[static_cast<size_t>(u)].empty()) release(u);
  }
}

bool ShardedParameters::gathered(int unit) const { return gathered_[static_cast<size_t>(unit)]; }

void ShardedParameters::reduce_gradients(int unit, double divisor) {
  torch::NoGradGuard no_grad;
  for (size_t f : unit_flats_[static_cast<size_t>(unit)]) {
    Flat& flat = *flats_[f];
    if (!flat.trains) continue;
    const size_t bytes = static_cast<size_t>(flat.whole.numel()) * flat.whole.element_size();
    at::DataPtr memory = take_spare(bytes, flat.whole.storage().allocator());
    torch::Tensor grads =
        torch::from_blob(memory.get(), {flat.whole.numel()}, flat.whole.options());
    grads.zero_();
    for (size_t j = 0; j < flat.members.size(); ++j) {
      torch::Tensor& p = params_[flat.members[j]];
      if (p.grad().defined()) {
        grads.narrow(0, flat.offsets[j], p.numel()).copy_(p.grad().reshape({-1}));
        p.mutable_grad().reset();
      }
    }
    if (f < ordered_.size() && ordered_[f]) {  // distributed.reproducible
      TORCH_INTERNAL_ASSERT(divisor == 1.0);
      ShardOrderedReduce& sum = *ordered_[f];
      sum.add(grads);
      grads = torch::Tensor();
      give_spare(bytes, std::move(memory));
      torch::Tensor& shard = shards_[flat.shard];
      shard.mutable_grad() = sum.complete() ? sum.owned_gradient() : torch::Tensor();
      continue;
    }
    torch::Tensor part = torch::empty({flat.part}, grads.options());
    group_->reduce_scatter_sum(part, grads, reduce_by_);
    grads = torch::Tensor();
    give_spare(bytes, std::move(memory));
    part.div_(divisor);
    torch::Tensor& shard = shards_[flat.shard];
    if (shard.grad().defined()) {
      shard.mutable_grad().add_(part);
    } else {
      shard.mutable_grad() = part;
    }
  }
}

double ShardedParameters::reproducible_norm() const {
  TORCH_INTERNAL_ASSERT(norm_order_.size() == params_.size());
  std::vector<int64_t> numels;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (norm_order_[i] < 0) continue;
    if (numels.size() <= size_t(norm_order_[i])) numels.resize(size_t(norm_order_[i]) + 1, 0);
    numels[size_t(norm_order_[i])] = params_[i].numel();
  }
  ParameterBlockSquares squares(numels);
  const int rank = group_->rank();
  for (const auto& flat : flats_) {
    const torch::Tensor& grad = shards_[flat->shard].grad();
    if (!flat->trains || !grad.defined()) continue;
    const int64_t begin = rank * flat->part, end = begin + flat->part;  // this rank's part
    for (size_t j = 0; j < flat->members.size(); ++j) {
      const size_t i = flat->members[j];
      const int64_t first = std::max(begin, flat->offsets[j]);
      const int64_t last = std::min(end, flat->offsets[j] + params_[i].numel());
      if (first >= last || norm_order_[i] < 0) continue;
      squares.add(size_t(norm_order_[i]), first - flat->offsets[j],
                  grad.narrow(0, first - begin, last - first));
    }
  }
  return squares.norm(group_.get());
}

void ShardedParameters::unshard() {
  torch::NoGradGuard no_grad;
  for (int u = 0; u < units(); ++u) {
    gather(u);
    for (size_t f : unit_flats_[static_cast<size_t>(u)]) {
      for (size_t i : flats_[f]->members) params_[i].set_data(params_[i].detach().clone());
    }
    release(u);
  }
}

ShardLayout ShardedParameters::layout() const {
  ShardLayout out;
  out.world_size = group_->world_size();
  out.flats.resize(shards_.size());
  for (const auto& flat : flats_) {
    ShardLayout::Flat& f = out.flats[flat->shard];
    f.unit = flat->unit;
    f.key = flat->key;
    f.dtype = c10::toString(flat->dtype);
    f.length = flat->length;
    f.part = flat->part;
    for (size_t j = 0; j < flat->members.size(); ++j) {
      const torch::Tensor& p = params_[flat->members[j]];
      f.members.push_back({names_[flat->members[j]], p.sizes().vec(), flat->offsets[j]});
    }
  }
  return out;
}

void ShardedParameters::load_whole(const std::map<std::string, torch::Tensor>& state,
                                   const std::string& what) {
  torch::NoGradGuard no_grad;
  for (const auto& flat : flats_) copy_part(*flat, state, what, shards_[flat->shard]);
}

std::vector<torch::Tensor> ShardedParameters::cut(const std::map<std::string, torch::Tensor>& state,
                                                  const std::string& what, c10::ScalarType dtype,
                                                  bool frozen_too) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> out(shards_.size());
  for (const auto& flat : flats_) {
    if (!flat->trains && flat->key < 0 && !frozen_too) continue;
    const torch::Tensor& shard = shards_[flat->shard];
    out[flat->shard] = torch::empty_like(
        shard, shard.options().dtype(shard.is_floating_point() ? dtype : shard.scalar_type()));
    copy_part(*flat, state, what, out[flat->shard]);
  }
  return out;
}

void ShardedParameters::copy_part(const Flat& flat,
                                  const std::map<std::string, torch::Tensor>& state,
                                  const std::string& what, torch::Tensor part) const {
  part.zero_();
  const int64_t first = group_->rank() * flat.part, end = first + flat.part;
  for (size_t j = 0; j < flat.members.size(); ++j) {
    const torch::Tensor& p = params_[flat.members[j]];
    const std::string& name = names_[flat.members[j]];
    const auto it = state.find(name);
    UT_CHECK_TRAIN(it != state.end(), what, " has no tensor ", name);
    UT_CHECK_TRAIN(it->second.sizes().equals(p.sizes()), what, ": ", name, " has shape ",
                   it->second.sizes(), ", the model's is ", p.sizes());
    // The member's elements that fall in this rank's part.
    const int64_t lo = std::max(first, flat.offsets[j]);
    const int64_t hi = std::min(end, flat.offsets[j] + p.numel());
    if (lo >= hi) continue;
    part.narrow(0, lo - first, hi - lo)
        .copy_(it->second.reshape({-1}).narrow(0, lo - flat.offsets[j], hi - lo));
  }
}

std::map<std::string, torch::Tensor> ShardedParameters::gather_whole(
    const std::vector<torch::Tensor>& parts) const {
  TORCH_INTERNAL_ASSERT(parts.size() == shards_.size());
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> out;
  for (const auto& flat : flats_) {
    const torch::Tensor& part = parts[flat->shard];
    torch::Tensor whole = torch::empty({flat->part * group_->world_size()}, part.options());
    group_->all_gather_shards(whole, part.detach());
    for (size_t j = 0; j < flat->members.size(); ++j) {
      const torch::Tensor& p = params_[flat->members[j]];
      out[names_[flat->members[j]]] =
          whole.narrow(0, flat->offsets[j], p.numel()).view(p.sizes()).clone();
    }
  }
  return out;
}

int64_t ShardedParameters::shard_bytes() const {
  int64_t bytes = 0;
  for (const auto& s : shards_) bytes += s.numel() * static_cast<int64_t>(s.element_size());
  return bytes;
}

int64_t ShardedParameters::whole_bytes() const {
  int64_t bytes = 0;
  for (const auto& p : params_) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  return bytes;
}

}  // namespace unitrain
