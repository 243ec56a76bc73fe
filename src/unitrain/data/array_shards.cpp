#include "unitrain/data/array_shards.h"

#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/data/formats/npy_format.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

/// The rows of `parts` one after the other, read from the part that holds each.
class ConcatenatedColumn : public ArrayColumn {
 public:
  ConcatenatedColumn(std::string name, std::vector<int64_t> shape,
                     std::vector<std::shared_ptr<const ArrayColumn>> parts)
      : ArrayColumn(std::move(name), std::move(shape), parts.front()->dtype()),
        parts_(std::move(parts)) {
    int64_t rows = 0;
    for (const auto& part : parts_) {
      first_rows_.push_back(rows);
      rows += part->shape()[0];
    }
  }

  torch::Tensor read(const std::vector<int64_t>& indices) const override {
    // (row in the part, position in the batch), by part.
    std::vector<std::vector<int64_t>> rows(parts_.size()), positions(parts_.size());
    for (size_t p = 0; p < indices.size(); ++p) {
      const size_t k = part_of(indices[p]);
      rows[k].push_back(indices[p] - first_rows_[k]);
      positions[k].push_back(static_cast<int64_t>(p));
    }
    std::vector<int64_t> sizes = shape();
    sizes[0] = static_cast<int64_t>(indices.size());
    torch::Tensor out;
    for (size_t k = 0; k < parts_.size(); ++k) {
      if (rows[k].empty()) continue;
      torch::Tensor got = parts_[k]->read(rows[k]);
      if (rows[k].size() == indices.size()) return got;  // the whole batch is in one shard
      if (!out.defined()) out = torch::empty(sizes, got.options());
      out.index_copy_(0, index_tensor(positions[k]), got);
    }
    return out.defined() ? out : torch::empty(sizes, torch::TensorOptions().dtype(dtype()));
  }

  bool in_memory() const override {
    return std::all_of(parts_.begin(), parts_.end(),
                       [](const auto& part) { return part->in_memory(); });
  }
  std::vector<std::string> class_names() const override { return parts_.front()->class_names(); }
  std::string row_name(int64_t row) const override {
    const size_t k = part_of(row);
    return parts_[k]->row_name(row - first_rows_[k]);
  }

 private:
  /// The part holding row `row`: the last one starting at or before it (parts with no rows
  /// start where the next one does, so the last of them is the one that holds it).
  size_t part_of(int64_t row) const {
    const auto after = std::upper_bound(first_rows_.begin(), first_rows_.end(), row);
    return static_cast<size_t>(after - first_rows_.begin()) - 1;
  }

  std::vector<std::shared_ptr<const ArrayColumn>> parts_;
  std::vector<int64_t> first_rows_;
};

std::vector<int64_t> row_shape(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

std::string row_shape_text(const std::vector<int64_t>& shape) {
  return numpy_shape_text(row_shape(shape));
}

}  // namespace

ArrayColumns concatenate_array_shards(const std::string& kind, std::vector<ArrayColumns> shards,
                                      bool classes_given) {
  UT_CHECK(!shards.empty(), kind, ": no shard files");
  if (shards.size() == 1) return std::move(shards.front());
  const ArrayColumns& first = shards.front();
  for (const ArrayColumns& shard : shards) {
    for (size_t k = 0; k < shard.size(); ++k) {
      const auto& [key, column] = shard[k];
      UT_CHECK(!column->shape().empty(), kind, ": ", column->name(), " (key ", key,
               ") is 0-d (a single value): every array needs a first dimension counting the "
               "examples; save it with shape (N, ...)");
      UT_CHECK(classes_given || column->class_names().empty(), kind, ": ", column->name(), " (key ",
               key, ") holds class names and the data has ", shards.size(),
               " shards: list the names in data.*.args.classes so that every shard indexes "
               "them alike");
      const ArrayColumn& head = *first[k].second;
      UT_CHECK(
          column->dtype() == head.dtype() && row_shape(column->shape()) == row_shape(head.shape()),
          kind, ": ", column->name(), " (key ", key, ") has rows of shape ",
          row_shape_text(column->shape()), " ", array_dtype_name(column->dtype()), " but ",
          head.name(), " has ", row_shape_text(head.shape()), " ", array_dtype_name(head.dtype()),
          "; shards are concatenated along the first dimension, so the other dimensions "
          "and the dtype must agree");
      const ArrayColumn& lead = *shard.front().second;
      UT_CHECK(column->shape()[0] == lead.shape()[0], kind, ": ", column->name(), " (key ", key,
               ") has ", column->shape()[0], " rows but ", lead.name(), " (key ",
               shard.front().first, ") has ", lead.shape()[0],
               "; the arrays of one shard hold the same examples, so they must agree");
    }
  }
  ArrayColumns out;
  for (size_t k = 0; k < first.size(); ++k) {
    std::vector<std::shared_ptr<const ArrayColumn>> parts;
    std::vector<int64_t> shape = first[k].second->shape();
    shape[0] = 0;
    for (const ArrayColumns& shard : shards) {
      parts.push_back(shard[k].second);
      shape[0] += shard[k].second->shape()[0];
    }
    const std::string name =
        first[k].second->name() + " (and " + std::to_string(shards.size() - 1) + " more shards)";
    out.emplace_back(first[k].first, std::make_shared<ConcatenatedColumn>(name, std::move(shape),
                                                                          std::move(parts)));
  }
  return out;
}

}  // namespace unitrain
