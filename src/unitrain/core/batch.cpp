#include "unitrain/core/batch.h"

#include <torch/torch.h>

#include <sstream>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string shape_str(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

/// Why example `i`'s `t` cannot be stacked with example 0's `first`; `indices` (when not empty)
/// are the examples' indices in their dataset.
std::string shape_mismatch(const std::string& name, const torch::Tensor& first,
                           const torch::Tensor& t, size_t i, const std::vector<int64_t>& indices) {
  const bool only_length =
      t.dim() == first.dim() && t.dim() > 0 && t.sizes().slice(1) == first.sizes().slice(1);
  // Images [C, H, W] of one channel count but different sizes.
  const bool image_sizes = t.dim() == 3 && first.dim() == 3 && t.size(0) == first.size(0);
  auto which = [&](size_t k) {
    return indices.empty() ? detail::concat("example ", k, " of the batch")
                           : detail::concat("the dataset's example ", indices[k]);
  };
  return detail::concat("examples disagree on the shape of '", name, "': ", shape_str(first), " (",
                        which(0), ") vs ", shape_str(t), " (", which(i), ")",
                        only_length   ? "; examples of varying length are batched by padding "
                                        "them to the longest: set data.collate: {type: pad}"
                        : image_sizes ? "; images of different sizes are batched after resizing or "
                                        "cropping them to one size: add a resize, center_crop or "
                                        "random_resized_crop to data.transforms"
                                      : "");
}

}  // namespace

Batch::Batch(std::initializer_list<Entry> entries) {
  for (const auto& e : entries) set(e.first, e.second);
}

void Batch::set(const std::string& name, torch::Tensor value) {
  for (auto& e : entries_) {
    if (e.first == name) {
      e.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(name, std::move(value));
}

const torch::Tensor& Batch::at(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.first == name) return e.second;
  }
  std::string names;
  for (const auto& e : entries_) names += (names.empty() ? "" : ", ") + e.first;
  throw ConfigError(detail::concat("the batch has no tensor named '", name,
                                   "'; it has: ", names.empty() ? "(nothing)" : names));
}

bool Batch::has(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.first == name) return true;
  }
  return false;
}

std::vector<std::string> Batch::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.first);
  return out;
}

int64_t Batch::size() const {
  if (entries_.empty() || entries_.front().second.dim() == 0) return 0;
  return entries_.front().second.size(0);
}

Batch Batch::to(const torch::Device& device, bool non_blocking) const {
  Batch out;
  for (const auto& e : entries_) out.set(e.first, e.second.to(device, non_blocking));
  return out;
}

Batch collate(const std::vector<Batch>& examples) { return collate(examples, {}); }

Batch collate(const std::vector<Batch>& examples, const std::vector<int64_t>& indices) {
  UT_CHECK(!examples.empty(), "cannot collate an empty list of examples");
  Batch out;
  const Batch& first = examples.front();
  for (const auto& [name, tensor] : first) {
    std::vector<torch::Tensor> parts;
    parts.reserve(examples.size());
    for (size_t i = 0; i < examples.size(); ++i) {
      const torch::Tensor& t = examples[i].at(name);
      if (t.sizes() != tensor.sizes()) {
        throw ConfigError(
            shape_mismatch(name, tensor, t, i,
                           indices.size() == examples.size() ? indices : std::vector<int64_t>{}));
      }
      parts.push_back(t);
    }
    out.set(name, torch::stack(parts));
  }
  return out;
}

}  // namespace unitrain
