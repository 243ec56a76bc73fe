#include "unitrain/data/tensor_dataset.h"

#include <torch/torch.h>

#include "unitrain/core/error.h"

namespace unitrain {

torch::Tensor index_tensor(const std::vector<int64_t>& indices) {
  return torch::from_blob(const_cast<int64_t*>(indices.data()),
                          {static_cast<int64_t>(indices.size())}, torch::kInt64);
}

TensorDataset::TensorDataset(Batch columns, std::map<std::string, int64_t> info,
                             const std::string& name)
    : info_(std::move(info)) {
  UT_CHECK(!columns.empty(), name, ": a tensor dataset needs at least one tensor");
  bool first = true;
  std::string first_name;
  for (const auto& [key, tensor] : columns) {
    UT_CHECK(tensor.defined() && tensor.dim() >= 1, name, ": tensor '", key,
             "' needs a first dimension indexing the examples");
    if (first) {
      size_ = tensor.size(0);
      first_name = key;
      first = false;
    }
    UT_CHECK(tensor.size(0) == size_, name, ": tensor '", key, "' has ", tensor.size(0),
             " rows but '", first_name, "' has ", size_);
    columns_.set(key, tensor.contiguous());
  }
}

Batch TensorDataset::get(int64_t index) const {
  UT_CHECK(index >= 0 && index < size_, "example index ", index, " is out of range [0, ", size_,
           ")");
  Batch out;
  for (const auto& [key, tensor] : columns_) out.set(key, tensor[index]);
  return out;
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  torch::Tensor index = index_tensor(indices);
  Batch out;
  for (const auto& [key, tensor] : columns_) out.set(key, tensor.index_select(0, index));
  return out;
}

}  // namespace unitrain
