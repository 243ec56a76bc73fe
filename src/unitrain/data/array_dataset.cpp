#include "unitrain/data/array_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

const std::vector<std::pair<std::string, torch::ScalarType>>& dtype_table() {
  static const std::vector<std::pair<std::string, torch::ScalarType>> names = {
      {"bool", torch::kBool},      {"uint8", torch::kUInt8},       {"int8", torch::kInt8},
      {"int16", torch::kInt16},    {"int32", torch::kInt32},       {"int64", torch::kInt64},
      {"float16", torch::kHalf},   {"bfloat16", torch::kBFloat16}, {"float32", torch::kFloat32},
      {"float64", torch::kFloat64}};
  return names;
}

bool is_integer(torch::ScalarType t) { return c10::isIntegralType(t, /*includeBool=*/false); }

}  // namespace

std::string array_dtype_name(torch::ScalarType t) {
  for (const auto& [text, type] : dtype_table()) {
    if (type == t) return text;
  }
  return c10::toString(t);
}

torch::ScalarType array_dtype_named(const std::string& name, const std::string& where) {
  std::vector<std::string> known;
  for (const auto& [text, type] : dtype_table()) {
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

std::string ArrayColumn::row_name(int64_t row) const {
  return name_ + " row " + std::to_string(row);
}

ArrayDataset::ArrayDataset(std::string kind, ArrayColumns columns, const NamedStrings& dtypes,
                           std::optional<int64_t> num_classes)
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
    if (k.name == "y") find_num_classes(k, num_classes);
  }
  if (num_classes) info_["num_classes"] = *num_classes;
}

void ArrayDataset::find_num_classes(const Key& y, std::optional<int64_t> num_classes) {
  const std::vector<std::string> names = y.column->class_names();
  if (!names.empty()) {
    const auto held = static_cast<int64_t>(names.size());
    UT_CHECK(!num_classes || held <= *num_classes, kind_, ": ", y.column->name(), " (key y) holds ",
             held, " class names, more than num_classes ", num_classes.value_or(0),
             " (data.*.args.num_classes)");
    info_["num_classes"] = held;
    return;
  }
  if (!is_integer(y.dtype)) return;
  if (num_classes) {
    checked_num_classes_ = num_classes;
    return;
  }
  const std::vector<int64_t>& shape = y.column->shape();
  const int64_t bytes =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>()) *
      static_cast<int64_t>(c10::elementSize(y.column->dtype()));
  UT_CHECK(bytes <= kScanLimitBytes, kind_, ": data.*.args.num_classes is not set and ",
           y.column->name(), " (key y) holds ", bytes,
           " bytes of labels, more than the 64 MiB read to find the largest label: set "
           "num_classes to the number of classes (labels are then checked as rows are read)");
  const std::optional<int64_t> largest = largest_value(y);
  if (largest) info_["num_classes"] = *largest + 1;
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
        kind_, k.column->name(), k.name, array_dtype_name(k.dtype), array_dtype_name(k.dtype),
        k.name, array_dtype_name(k.dtype));
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

void ArrayDataset::check_labels(const torch::Tensor& labels, const Key& key,
                                const std::vector<int64_t>& indices) const {
  const int64_t n = *checked_num_classes_;
  torch::Tensor bad = labels.lt(0).logical_or_(labels.ge(n));
  if (!bad.any().item<bool>()) return;
  const int64_t p = bad.reshape({bad.size(0), -1}).any(1).nonzero()[0][0].item<int64_t>();
  const int64_t label =
      labels[p].reshape({-1}).masked_select(bad[p].reshape({-1}))[0].item<int64_t>();
  throw ConfigError(detail::concat(
      kind_, ": ", key.column->row_name(indices[p]), " (key ", key.name, ") holds label ", label,
      ", not in [0, num_classes = ", n, "): raise data.*.args.num_classes, or fix the labels"));
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
    if (checked_num_classes_ && k.name == "y") check_labels(t, k, indices);
    out.set(k.name, t.scalar_type() == k.dtype ? t : t.to(k.dtype));
  }
  return out;
}

bool ArrayDataset::in_memory() const {
  return std::all_of(keys_.begin(), keys_.end(),
                     [](const Key& k) { return k.column->in_memory(); });
}

}  // namespace unitrain
