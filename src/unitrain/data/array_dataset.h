#pragma once
// ArrayDataset: named arrays read row by row from files (npy, npz, hdf5), one array per batch key.
#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/scan_limit.h"

namespace unitrain {

// NamedStrings, string_map_of and declare_named_strings: core/options.h.

/// One array of an ArrayDataset: `shape()[0]` rows of shape `shape()[1:]`, read on demand.
/// read() is const and safe to call from several loader threads at once.
class ArrayColumn {
 public:
  ArrayColumn(std::string name, std::vector<int64_t> shape, torch::ScalarType dtype)
      : name_(std::move(name)), shape_(std::move(shape)), dtype_(dtype) {}
  virtual ~ArrayColumn() = default;

  /// How messages name it: "'images.npy'", "'data.npz' array 'x'", "'a.h5' dataset '/x'".
  const std::string& name() const { return name_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  /// What read() returns: the file's type, or the closest LibTorch has (see docs/data.md).
  torch::ScalarType dtype() const { return dtype_; }
  /// Rows `indices` (each in [0, shape()[0])), in that order: [indices.size(), shape()[1:]...].
  virtual torch::Tensor read(const std::vector<int64_t>& indices) const = 0;
  /// True when the rows are held in memory (read() does no file I/O).
  virtual bool in_memory() const { return false; }
  /// A column of class names read as indices: what each index means; empty otherwise.
  virtual std::vector<std::string> class_names() const { return {}; }
  /// How messages name row `row` (in [0, shape()[0])): "'labels.npy' row 17"; a column over
  /// several files names the file that holds it and the row in that file.
  virtual std::string row_name(int64_t row) const;

 private:
  std::string name_;
  std::vector<int64_t> shape_;
  torch::ScalarType dtype_;
};

using ArrayColumns = std::vector<std::pair<std::string, std::shared_ptr<const ArrayColumn>>>;

/// Examples made of one row of each named array: key `k` of example i is row i of array k,
/// converted to the dtype `dtypes` gives for `k`, else kept, except that a floating-point array
/// other than float32 is read as float32 (logged once, naming the array). get_batch reads only the
/// requested rows. info: `num_features` when `x` is 2-D ([N, F]); `num_classes` when `y` holds
/// class names (their number), when `num_classes` is given, or when `y` is of an integer type
/// and holds at most kScanLimitBytes (its largest value + 1, from one pass over `y` when built).
/// With `num_classes` given, the labels of an integer `y` are checked as their rows are read.
/// ConfigError, prefixed with `kind`, when there are no arrays, an array is 0-d or holds no rows,
/// two arrays disagree on their number of rows (naming both and their counts), `dtypes` names an
/// unknown key or dtype, an integer `y` holds more than kScanLimitBytes and `num_classes` is not
/// given, `y` holds more class names than `num_classes`, and (when read) a label of an integer
/// `y` is < 0 or >= `num_classes` (naming the file and its row).
class ArrayDataset : public Dataset {
 public:
  ArrayDataset(std::string kind, ArrayColumns columns, const NamedStrings& dtypes,
               std::optional<int64_t> num_classes = std::nullopt);

  int64_t size() const override { return size_; }
  Batch get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::map<std::string, int64_t> info() const override { return info_; }
  bool in_memory() const override;
  /// The class names of the `y` array when it holds names (a NumPy string array).
  std::vector<std::string> class_names() const override;

 private:
  struct Key {
    std::string name;
    std::shared_ptr<const ArrayColumn> column;
    torch::ScalarType dtype;  ///< what the batch holds
  };
  /// Floating-point arrays (float64, float16, bfloat16) that `dtypes` does not name are read
  /// as float32, the dtype of a model's weights, and said once in the log with how to keep them.
  void read_floats_as_float32(const NamedStrings& dtypes);
  /// Sets info's num_classes from `y` (`key`) and the declared `num_classes`, see the class.
  void find_num_classes(const Key& key, std::optional<int64_t> num_classes);
  /// The largest value of `key`'s array, read in slices of rows; none when it has no elements.
  std::optional<int64_t> largest_value(const Key& key) const;
  /// ConfigError naming the row and its label when a label of `labels` (rows `indices` of
  /// `y`) is < 0 or >= the declared num_classes.
  void check_labels(const torch::Tensor& labels, const Key& key,
                    const std::vector<int64_t>& indices) const;
  std::string kind_;
  std::vector<Key> keys_;
  int64_t size_ = 0;
  std::map<std::string, int64_t> info_;
  std::optional<int64_t> checked_num_classes_;  ///< declared, for an integer `y`: checked on read
};

/// How `dtypes` names `t` (float32, int64, ...); LibTorch's name for a type it does not list.
std::string array_dtype_name(torch::ScalarType t);

/// The dtype named `name` (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32,
/// float64); ConfigError naming `where` and listing them otherwise.
torch::ScalarType array_dtype_named(const std::string& name, const std::string& where);

/// Declares the `num_classes` key of an options struct with a `std::optional<int64_t>
/// num_classes` member.
template <typename T>
void declare_array_num_classes(Options<T>& o) {
  o.field("num_classes", &T::num_classes)
      .gt(0)
      .help(
          "the number of classes of an integer y (labels in [0, num_classes), checked as rows "
          "are read); null = the largest label + 1, found by reading y, which must then hold at "
          "most 64 MiB");
}

/// Declares the `dtypes` key (a map batch key -> dtype name) of an options struct with a
/// `NamedStrings dtypes` member; names are checked when the section is read.
template <typename T>
void declare_array_dtypes(Options<T>& o) {
  declare_named_strings(o, "dtypes", &T::dtypes, "{x: float32, y: int64}")
      .def("{}")
      .help(
          "dtype to convert each batch key's array to, e.g. {x: float32, y: int64} (bool, "
          "uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64); a key not "
          "named keeps its array's type (uint16 read as int32, uint32 and uint64 as int64), "
          "except float64, float16 and bfloat16, read as float32 (the log says so)");
  o.check([](T& out, const Config& c) {
    for (const auto& [key, name] : out.dtypes) array_dtype_named(name, c.key_path("dtypes." + key));
  });
}

}  // namespace unitrain
