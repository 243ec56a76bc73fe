#include "unitrain/core/unit_parts.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

thread_local BuildInParts* current_scope = nullptr;

/// Every kept flat of this process, and which flat keeps each parameter. A flat holds its
/// members (so no other tensor can take a kept one's address); a flat whose members nothing
/// else holds any more (a model built in parts and dropped untrained) goes at the next scope.
struct Keeping {
  std::mutex mutex;
  std::vector<std::shared_ptr<KeptFlat>> flats;  // in the order the units were built
  std::map<const c10::TensorImpl*, std::pair<std::shared_ptr<KeptFlat>, size_t>> of;

  void forget(const std::shared_ptr<KeptFlat>& flat) {
    for (const torch::Tensor& m : flat->members) of.erase(m.unsafeGetTensorImpl());
    flats.erase(std::find(flats.begin(), flats.end(), flat));
  }
};

Keeping& keeping() {
  static Keeping* k = new Keeping();  // never destroyed: no tensor freed after LibTorch's exit
  return *k;
}

/// The elements of [offset, offset + numel) of a flat that fall into `rank`'s part of `n`:
/// {first in the member, first in the part, count}; count 0 when none.
struct Overlap {
  int64_t in_member = 0, in_part = 0, count = 0;
};
Overlap overlap(int64_t offset, int64_t numel, int rank, int64_t n) {
  const int64_t lo = std::max(offset, rank * n), hi = std::min(offset + numel, (rank + 1) * n);
  if (hi <= lo) return {};
  return {lo - offset, lo - rank * n, hi - lo};
}

/// Whether `p`'s memory is its own, whole (no view of another tensor's, none shared).
bool owns_its_memory(const torch::Tensor& p) {
  return p.defined() && p.is_contiguous() && p.storage_offset() == 0 &&
         p.storage().nbytes() == static_cast<size_t>(p.numel()) * p.element_size() &&
         p.storage().use_count() == 1;
}

}  // namespace

BuildInParts::BuildInParts(int rank, int world) : rank_(rank), world_(world) {
  UT_CHECK(world >= 1 && rank >= 0 && rank < world, "BuildInParts: rank ", rank, " is not one of ",
           world, " process(es)");
  UT_CHECK(current_scope == nullptr, "BuildInParts: a scope is already open on this thread");
  current_scope = this;
  Keeping& k = keeping();
  std::lock_guard<std::mutex> lock(k.mutex);
  std::vector<std::shared_ptr<KeptFlat>> dropped;
  for (const auto& flat : k.flats) {
    const bool held = std::any_of(flat->members.begin(), flat->members.end(),
                                  [](const torch::Tensor& m) { return m.use_count() > 1; });
    if (!held) dropped.push_back(flat);
  }
  for (const auto& flat : dropped) k.forget(flat);
}

BuildInParts::~BuildInParts() { current_scope = nullptr; }

int parts_world() { return current_scope != nullptr ? current_scope->world() : 1; }

BuildInParts::Paused::Paused() : paused_(current_scope) { current_scope = nullptr; }
BuildInParts::Paused::~Paused() { current_scope = paused_; }

void unit_built(const std::vector<torch::Tensor>& params) {
  const BuildInParts* scope = current_scope;
  if (scope == nullptr || scope->world() <= 1) return;
  Keeping& k = keeping();
  std::lock_guard<std::mutex> lock(k.mutex);
  // Per dtype, in order of first appearance.
  std::vector<std::shared_ptr<KeptFlat>> flats;
  std::vector<c10::ScalarType> dtypes;
  for (const torch::Tensor& p : params) {
    if (!owns_its_memory(p) || k.of.count(p.unsafeGetTensorImpl())) continue;
    const auto at = static_cast<size_t>(std::find(dtypes.begin(), dtypes.end(), p.scalar_type()) -
                                        dtypes.begin());
    if (at == dtypes.size()) {
      dtypes.push_back(p.scalar_type());
      flats.push_back(std::make_shared<KeptFlat>());
      flats.back()->rank = scope->rank();
      flats.back()->world = scope->world();
    }
    KeptFlat& flat = *flats[at];
    flat.members.push_back(p);
    flat.offsets.push_back(flat.length);
    flat.length += p.numel();
  }
  torch::NoGradGuard no_grad;
  const int rank = scope->rank(), world = scope->world();
  for (const auto& flat : flats) {
    const int64_t n = (flat->length + world - 1) / world;
    const torch::Tensor& first = flat->members[0];
    flat->part = torch::zeros({n}, first.options().requires_grad(false));
    for (size_t j = 0; j < flat->members.size(); ++j) {
      const torch::Tensor& p = flat->members[j];
      const Overlap o = overlap(flat->offsets[j], p.numel(), rank, n);
      if (o.count > 0) {
        flat->part.narrow(0, o.in_part, o.count)
            .copy_(p.detach().reshape({-1}).narrow(0, o.in_member, o.count));
      }
      free_tensor_memory(p);
      k.of[p.unsafeGetTensorImpl()] = {flat, j};
    }
    k.flats.push_back(flat);
  }
}

bool kept_in_parts(const torch::Tensor& param) {
  Keeping& k = keeping();
  std::lock_guard<std::mutex> lock(k.mutex);
  return param.defined() && k.of.count(param.unsafeGetTensorImpl()) > 0;
}

bool load_into_parts(const torch::Tensor& param, const torch::Tensor& whole) {
  Keeping& k = keeping();
  std::lock_guard<std::mutex> lock(k.mutex);
  const auto it = param.defined() ? k.of.find(param.unsafeGetTensorImpl()) : k.of.end();
  if (it == k.of.end()) return false;
  const KeptFlat& flat = *it->second.first;
  const size_t j = it->second.second;
  UT_CHECK(whole.numel() == param.numel(), "load_into_parts: ", whole.numel(),
           " values for a parameter of ", param.numel());
  torch::NoGradGuard no_grad;
  const Overlap o = overlap(flat.offsets[j], param.numel(), flat.rank, flat.part.numel());
  if (o.count > 0) {
    flat.part.narrow(0, o.in_part, o.count)
        .copy_(whole.detach().reshape({-1}).narrow(0, o.in_member, o.count));
  }
  return true;
}

std::vector<KeptFlat> take_kept_flats(const std::vector<torch::Tensor>& params) {
  Keeping& k = keeping();
  std::lock_guard<std::mutex> lock(k.mutex);
  std::vector<std::shared_ptr<KeptFlat>> taken;
  for (const torch::Tensor& p : params) {
    const auto it = p.defined() ? k.of.find(p.unsafeGetTensorImpl()) : k.of.end();
    if (it != k.of.end() && std::find(taken.begin(), taken.end(), it->second.first) == taken.end())
      taken.push_back(it->second.first);
  }
  std::vector<KeptFlat> out;
  for (const auto& flat : k.flats) {  // in the order they were built
    if (std::find(taken.begin(), taken.end(), flat) != taken.end()) out.push_back(*flat);
  }
  for (const auto& flat : taken) k.forget(flat);
  return out;
}

void free_tensor_memory(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(at::DataPtr(nullptr, s->device()));
  s->set_nbytes(0);
}

void make_tensor_memory(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (s->nbytes() == bytes) return;
  s->set_data_ptr_noswap(s->allocator()->allocate(bytes));
  s->set_nbytes(bytes);
}

}  // namespace unitrain
