#pragma once
// Batch: named tensors, so datasets, models and losses agree on names (x, y, mask, ...).
#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace unitrain {

/// An ordered map name -> tensor. As a dataset example the tensors have no batch dimension;
/// as a collated batch their first dimension is the batch. `at` on a missing name throws a
/// ConfigError listing the names present.
class Batch {
 public:
  using Entry = std::pair<std::string, torch::Tensor>;

  Batch() = default;
  Batch(std::initializer_list<Entry> entries);

  void set(const std::string& name, torch::Tensor value);  ///< insert or replace
  const torch::Tensor& at(const std::string& name) const;
  bool has(const std::string& name) const;
  std::vector<std::string> names() const;
  /// The number of examples: the first dimension of the first tensor (0 when empty).
  int64_t size() const;
  bool empty() const { return entries_.empty(); }
  Batch to(const torch::Device& device, bool non_blocking = false) const;

  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
};

/// Stacks examples with equal names and shapes into one batch; ConfigError naming the key and
/// both shapes when two examples disagree.
Batch collate(const std::vector<Batch>& examples);
/// The same, for the examples of a dataset at `indices` (one each): a shape error names the
/// examples by their index in the dataset, not their place in the batch.
Batch collate(const std::vector<Batch>& examples, const std::vector<int64_t>& indices);

}  // namespace unitrain
