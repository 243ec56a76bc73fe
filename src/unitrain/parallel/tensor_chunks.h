#pragma once
// The chunks of distributed.reproducible_chunks' layers (tensor_parallel.h), between
// tensor_parallel.cpp, which makes the collectives, and parallel_layers.cpp, which computes the
// layers: a chunked layer's pieces gathered over its tensor group and added in chunk order.
#include <torch/types.h>

#include <memory>
#include <vector>

namespace unitrain {

class ProcessGroup;

namespace tp {

/// Every process's chunks `mine` [k, ...] joined into [C, ...] in chunk order forward (the
/// group null or alone: `mine`); this process's chunks of the gradient backward.
torch::Tensor all_chunks(const torch::Tensor& mine, const std::shared_ptr<ProcessGroup>& group);
/// The chunks [C, ...] added in chunk order: chunk 0, then 1, 2, ...
torch::Tensor in_chunk_order(const torch::Tensor& all);
/// `x` to each of this process's `k` chunks of a chunked column-parallel layer forward; each
/// chunk's gradient of x gathered over the group and added in chunk order backward (the
/// all-reduce of copy_to_group, in an order that does not depend on the group's size).
std::vector<torch::Tensor> fan_out(const torch::Tensor& x,
                                   const std::shared_ptr<ProcessGroup>& group, int64_t k);

}  // namespace tp
}  // namespace unitrain
