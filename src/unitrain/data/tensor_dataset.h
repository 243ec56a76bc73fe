#pragma once
// TensorDataset: examples held as whole tensors, one row per example.
#include <map>
#include <string>
#include <vector>

#include "unitrain/data/dataset.h"

namespace unitrain {

/// A dataset made of named tensors whose first dimension indexes the examples (equal for all).
/// get(i) is row i of each tensor; get_batch is one index_select per tensor. Immutable, so safe
/// from any number of loader threads. ConfigError when `columns` is empty or the tensors
/// disagree on their number of rows (naming `name` and both counts).
///
/// Example: `TensorDataset({{"x", torch::randn({100, 4})}, {"y", torch::zeros({100})}})`.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(Batch columns, std::map<std::string, int64_t> info = {},
                         const std::string& name = "tensor dataset");

  int64_t size() const override { return size_; }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::map<std::string, int64_t> info() const override { return info_; }
  bool in_memory() const override { return true; }
  std::vector<std::string> class_names() const override { return class_names_; }
  /// What the class indices of the target mean (a CSV's class names), for class_names().
  void set_class_names(std::vector<std::string> names) { class_names_ = std::move(names); }

  const Batch& columns() const { return columns_; }

 private:
  Batch columns_;
  int64_t size_ = 0;
  std::map<std::string, int64_t> info_;
  std::vector<std::string> class_names_;
};

/// An int64 tensor over `indices`' own memory (no copy), for an index_select while `indices`
/// lives.
torch::Tensor index_tensor(const std::vector<int64_t>& indices);

}  // namespace unitrain
