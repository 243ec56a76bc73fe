#include "unitrain/data/array_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

const std::vector<std::pair<std::string, torch::ScalarType>>& dtype_names() {
  static const std::vector<std::pair<std::string, torch::ScalarType>> names = {
      {"bool", torch::kBool},      {"uint8", torch::kUInt8},       {"int8", torch::kInt8},
      {"int16", torch::kInt16},    {"int32", torch::kInt32},       {"int64", torch::kInt64},
      {"float16", torch::kHalf},   {"bfloat16", torch::kBFloat16}, {"float32", torch::kFloat32},
      {"float64", torch::kFloat64}};
  return names;
}

std::string dtype_name(torch::ScalarType t) {
  for (const auto& [text, type] : dtype_names()) {
    if (type == t) return text;
  }
  return c10::toString(t);
}

bool is_integer(torch::ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/false); }

}  // namespace

torch::ScalarType array_dtype_named(const std::string& name, const std::string& where) {
  std::vector<std::string> known;
  for (const auto& [text, type] : dtype_names()) {
    if (text == name) return type;
    known.push_back(text);
  }
  const std::string hint = closest_match(name, known);
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw ConfigError(detail::concat(where, ": unknown dtype '", name, "'",
                                   hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                                   "; one of: ", list));
}

ArrayDataset::ArrayDataset(std::string kind, ArrayColumns columns, const NamedStrings& dtypes)
    : kind_(std::move(kind)) {
  UT_CHECK(!columns.empty(), kind_, ": no arrays given; name at least one, e.g. {x: ..., y: ...}");
  for (auto& [key, column] : columns) {
    const std::vector<int64_t>& shape = column->shape();
    UT_CHECK(!shape.empty(), kind_, ": ", column->name(), " (key ", key,
             ") is 0-d (a single value): every array needs a first dimension counting the "
             "examples; save it with shape (N, ...)");
    UT_CHECK(shape[0] > 0, kind_, ": ", column->name(), " (key ", key,
             ") holds no rows; every array's first dimension counts the examples");
    if (keys_.empty()) size_ = shape[0];
    UT_CHECK(shape[0] == size_, kind_, ": ", column->name(), " (key ", key, ") has ", shape[0],
             " rows but ", keys_.front().column->name(), " (key ", keys_.front().name, ") has ",
             size_, "; every array's first dimension counts the examples, so they must agree");
    keys_.push_back({key, column, column->dtype()});
  }
  for (const auto& [key, name] : dtypes) {
    auto it = std::find_if(keys_.begin(), keys_.end(), [&](const Key& k) { return k.name == key; });
    if (it == keys_.end()) {
      std::string list;
      for (const Key& k : keys_) list += (list.empty() ? "" : ", ") + k.name;
      throw ConfigError(detail::concat(kind_, ": dtypes names key '", key,
                                       "', which is not one of the arrays' keys (", list, ")"));
    }
    it->dtype = array_dtype_named(name, kind_ + ": dtypes." + key);
  }
  read_floats_as_float32(dtypes);
  for (const Key& k : keys_) {
    if (k.name == "x" && k.column->shape().size() == 2) {
      info_["num_features"] = k.column->shape()[1];
    }
    if (k.name == "y" && !k.column->class_names().empty()) {
      info_["num_classes"] = static_cast<int64_t>(k.column->class_names().size());
    } else if (k.name == "y" && is_integer(k.dtype)) {
      const std::optional<int64_t> largest = largest_value(k);
      if (largest) info_["num_classes"] = *largest + 1;
    }
  }
}

std::vector<std::string> ArrayDataset::class_names() const {
  for (const Key& k : keys_) {
    if (k.name == "y") return k.column->class_names();
  }
  return {};
}

void ArrayDataset::read_floats_as_float32(const NamedStrings& dtypes) {
  for (Key& k : keys_) {
    const bool named = std::any_of(dtypes.begin(), dtypes.end(),
                                   [&](const auto& entry) { return entry.first == k.name; });
    if (named || !c10::isFloatingType(k.dtype) || k.dtype == torch::kFloat32) continue;
    spdlog::info(
        "{}: {} (key {}) is {}; read as float32, the dtype of the model's weights (to keep {}, "
        "set dtypes: {{{}: {}}})",
        kind_, k.column->name(), k.name, dtype_name(k.dtype), dtype_name(k.dtype), k.name,
        dtype_name(k.dtype));
    k.dtype = torch::kFloat32;
  }
}

std::optional<int64_t> ArrayDataset::largest_value(const Key& key) const {
  constexpr int64_t kSlice = 1 << 16;
  std::optional<int64_t> largest;
  std::vector<int64_t> rows;
  for (int64_t start = 0; start < size_; start += kSlice) {
    rows.resize(static_cast<size_t>(std::min(kSlice, size_ - start)));
    std::iota(rows.begin(), rows.end(), start);
    torch::Tensor part = key.column->read(rows).to(key.dtype);
    if (part.numel() > 0) {
      const int64_t top = part.max().item<int64_t>();
      largest = largest ? std::max(*largest, top) : top;
    }
  }
  return largest;
}

Batch ArrayDataset::get(int64_t index) const {
  Batch b = get_batch({index});
  Batch out;
  for (const auto& [key, tensor] : b) out.set(key, tensor[0]);
  return out;
}

Batch ArrayDataset::get_batch(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices) {
    UT_CHECK(i >= 0 && i < size_, kind_, ": example index ", i, " is out of range [0, ", size_,
             ")");
  }
  Batch out;
  for (const Key& k : keys_) {
    torch::Tensor t = k.column->read(indices);
    out.set(k.name, t.scalar_type() == k.dtype ? t : t.to(k.dtype));
  }
  return out;
}

bool ArrayDataset::in_memory() const {
  return std::all_of(keys_.begin(), keys_.end(),
                     [](const Key& k) { return k.column->in_memory(); });
}

}  // namespace unitrain
