// ProcessGroup::from_owners and all_gather_from_owners: tensors sent from the rank that owns
// each to every rank (ZeRO's updated parameters), by broadcasts on Gloo, all-gathers on NCCL.
#include <torch/torch.h>

#include <algorithm>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "unitrain/parallel/process_group.h"

namespace unitrain {

void ProcessGroup::from_owners(std::vector<torch::Tensor>& tensors,
                               const std::vector<int>& owners) {
  if (is_nccl()) {
    all_gather_from_owners(tensors, owners);
  } else {
    broadcast_from(tensors, owners);
  }
}

void ProcessGroup::all_gather_from_owners(std::vector<torch::Tensor>& tensors,
                                          const std::vector<int>& owners) {
  TORCH_INTERNAL_ASSERT(tensors.size() == owners.size());
  // Per dtype, in the order the dtypes first appear (the same on every rank): where each tensor
  // sits in its owner's chunk.
  struct Chunks {
    c10::ScalarType dtype;
    std::vector<size_t> members;   ///< indices into `tensors`
    std::vector<int64_t> offsets;  ///< each member's offset in its owner's chunk
    std::vector<int64_t> filled;   ///< elements per rank
    int64_t chunk = 0;             ///< elements every rank sends: the largest rank's
    torch::Tensor mine, gathered;  ///< this rank's chunk; every rank's, by rank
  };
  std::vector<Chunks> by_dtype;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const c10::ScalarType dtype = tensors[i].scalar_type();
    auto it = std::find_if(by_dtype.begin(), by_dtype.end(),
                           [dtype](const Chunks& c) { return c.dtype == dtype; });
    if (it == by_dtype.end()) {
      by_dtype.push_back(
          Chunks{dtype, {}, {}, std::vector<int64_t>(size_t(world_size_), 0), 0, {}, {}});
      it = by_dtype.end() - 1;
    }
    TORCH_INTERNAL_ASSERT(owners[i] >= 0 && owners[i] < world_size_);
    int64_t& filled = it->filled[size_t(owners[i])];
    it->members.push_back(i);
    it->offsets.push_back(filled);
    filled += tensors[i].numel();
    it->chunk = std::max(it->chunk, filled);
  }
  torch::NoGradGuard no_grad;
  int64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  wait("all_gather", static_cast<int32_t>(tensors.size()), bytes, [&] {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (Chunks& c : by_dtype) {
      if (c.chunk == 0) continue;
      const auto options = torch::TensorOptions().device(device_).dtype(
          needs_widening(c.dtype) ? torch::kFloat32 : c.dtype);
      c.mine = torch::zeros({c.chunk}, options);
      for (size_t j = 0; j < c.members.size(); ++j) {
        const torch::Tensor& t = tensors[c.members[j]];
        if (owners[c.members[j]] == rank_) {
          c.mine.narrow(0, c.offsets[j], t.numel()).copy_(t.reshape({-1}));
        }
      }
      c.gathered = torch::empty({world_size_ * c.chunk}, options);
      std::vector<torch::Tensor> in{c.mine};
      if (is_nccl()) {  // straight into the buffer
        works.push_back(group_->_allgather_base(c.gathered, in[0]));
      } else {  // Gloo has no all-gather into one tensor: into views of it, one per rank
        std::vector<std::vector<torch::Tensor>> out(1);
        for (int r = 0; r < world_size_; ++r) {
          out[0].push_back(c.gathered.narrow(0, r * c.chunk, c.chunk));
        }
        works.push_back(group_->allgather(out, in));
      }
    }
    for (auto& w : works) w->wait();
  });
  for (const Chunks& c : by_dtype) {
    for (size_t j = 0; j < c.members.size(); ++j) {
      torch::Tensor& t = tensors[c.members[j]];
      const int owner = owners[c.members[j]];
      if (owner == rank_) continue;
      t.copy_(c.gathered.narrow(0, owner * c.chunk + c.offsets[j], t.numel()).view(t.sizes()));
    }
  }
}

}  // namespace unitrain
