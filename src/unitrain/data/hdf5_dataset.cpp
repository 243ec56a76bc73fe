#include "unitrain/data/hdf5_dataset.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>

#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/data/formats/hdf5_handles.h"
#include "unitrain/data/formats/npy_format.h"
#include "unitrain/data/tensor_dataset.h"

namespace unitrain {
namespace {

/// How a dataset's elements are read: HDF5 converts them to `memory` (native byte order)
/// into a buffer of `buffer`, returned as `column`.
struct ElementType {
  std::shared_ptr<const Hid> memory;
  torch::ScalarType buffer;
  torch::ScalarType column;
  std::string text;  ///< "uint16", "float32", "bool", for messages
};

/// A copy of the native type `t`, closed when the last owner goes.
std::shared_ptr<const Hid> native_type(hid_t t) {
  return std::make_shared<const Hid>(H5Tcopy(t), H5Tclose);
}

/// element_type of an integer type (uint16 is read as int32, uint32 and uint64 as int64);
/// nullopt for a size no tensor type holds.
std::optional<ElementType> integer_element_type(hid_t file_type) {
  const size_t size = H5Tget_size(file_type);
  const bool is_signed = H5Tget_sign(file_type) != H5T_SGN_NONE;
  const std::string text = (is_signed ? "int" : "uint") + std::to_string(8 * size);
  if (size == 1 && is_signed)
    return ElementType{native_type(H5T_NATIVE_INT8), torch::kInt8, torch::kInt8, text};
  if (size == 1) {
    return ElementType{native_type(H5T_NATIVE_UINT8), torch::kUInt8, torch::kUInt8, text};
  }
  if (size == 2 && is_signed) {
    return ElementType{native_type(H5T_NATIVE_INT16), torch::kInt16, torch::kInt16, text};
  }
  if (size <= 4 && is_signed == (size == 4)) {  // int32, or uint16 widened
    return ElementType{native_type(H5T_NATIVE_INT32), torch::kInt32, torch::kInt32, text};
  }
  if (size == 4 || (size == 8 && is_signed)) {  // uint32 widened, or int64
    return ElementType{native_type(H5T_NATIVE_INT64), torch::kInt64, torch::kInt64, text};
  }
  if (size == 8) {
    return ElementType{native_type(H5T_NATIVE_UINT64), torch::kInt64, torch::kInt64, text};
  }
  return std::nullopt;
}

ElementType element_type(hid_t file_type, const std::string& where) {
  const size_t size = H5Tget_size(file_type);
  switch (H5Tget_class(file_type)) {
    case H5T_INTEGER:
      if (std::optional<ElementType> t = integer_element_type(file_type)) return *t;
      break;
    case H5T_FLOAT: {
      const std::string text = "float" + std::to_string(8 * size);
      if (size == 2) return {native_type(H5T_NATIVE_FLOAT), torch::kFloat32, torch::kHalf, text};
      if (size == 4) {
        return {native_type(H5T_NATIVE_FLOAT), torch::kFloat32, torch::kFloat32, text};
      }
      if (size == 8) {
        return {native_type(H5T_NATIVE_DOUBLE), torch::kFloat64, torch::kFloat64, text};
      }
      break;
    }
    case H5T_ENUM: {  // h5py's bool: FALSE = 0, TRUE = 1 over one byte
      char* first = H5Tget_member_name(file_type, 0);
      const bool h5py_bool = size == 1 && H5Tget_nmembers(file_type) == 2 && first != nullptr &&
                             std::string(first) == "FALSE";
      H5free_memory(first);
      if (h5py_bool) {
        return {
            std::make_shared<const Hid>(H5Tget_native_type(file_type, H5T_DIR_DEFAULT), H5Tclose),
            torch::kInt8, torch::kBool, "bool"};
      }
      throw ConfigError(detail::concat(where,
                                       " holds an enum type other than h5py's bool; "
                                       "unitrain reads integer, float and bool datasets: "
                                       "store the enum's integer values instead"));
    }
    case H5T_COMPOUND:
      throw ConfigError(detail::concat(
          where,
          " is a compound (structured) dataset; unitrain reads datasets of one numeric "
          "or bool type: store each field as a dataset of its own"));
    default:
      break;
  }
  const H5T_class_t type_class = H5Tget_class(file_type);
  const char* what = type_class == H5T_STRING      ? "strings"
                     : type_class == H5T_VLEN      ? "variable-length sequences"
                     : type_class == H5T_ARRAY     ? "array elements"
                     : type_class == H5T_OPAQUE    ? "opaque bytes"
                     : type_class == H5T_REFERENCE ? "object references"
                     : type_class == H5T_BITFIELD  ? "bitfields"
                                                   : "elements of an unsupported type";
  throw ConfigError(detail::concat(where, " holds ", what, " (", size,
                                   " bytes each); unitrain reads integers (8 to 64 bits), floats "
                                   "(16, 32 or 64 bits) and bools: store the data as numbers"));
}

/// One dataset in one file: rows [first_row, first_row + rows) of its column.
struct Hdf5Part {
  std::string path;
  std::shared_ptr<const Hid> dataset;
  std::vector<int64_t> shape;
  int64_t first_row = 0;
};

/// One batch key: a dataset of the same name in each file, rows concatenated.
class Hdf5Column : public ArrayColumn {
 public:
  Hdf5Column(std::string name, std::string dataset, std::vector<Hdf5Part> parts,
             std::vector<int64_t> shape, ElementType type)
      : ArrayColumn(std::move(name), std::move(shape), type.column),
        dataset_(std::move(dataset)),
        parts_(std::move(parts)),
        type_(std::move(type)) {}

  const std::vector<Hdf5Part>& parts() const { return parts_; }

  std::string row_name(int64_t row) const override {
    size_t k = parts_.size() - 1;
    while (parts_[k].first_row > row) --k;
    return detail::concat("'", parts_[k].path, "' dataset '", dataset_, "' row ",
                          row - parts_[k].first_row);
  }

  torch::Tensor read(const std::vector<int64_t>& indices) const override {
    std::vector<int64_t> sizes = shape();
    sizes[0] = static_cast<int64_t>(indices.size());
    torch::Tensor out = torch::empty(sizes, type_.buffer);
    // (row in the part's file, position in the batch), by part.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> wanted(parts_.size());
    for (size_t p = 0; p < indices.size(); ++p) {
      size_t k = parts_.size() - 1;
      while (parts_[k].first_row > indices[p]) --k;
      wanted[k].emplace_back(indices[p] - parts_[k].first_row, static_cast<int64_t>(p));
    }
    for (size_t k = 0; k < parts_.size(); ++k) {
      auto& rows = wanted[k];
      if (rows.empty()) continue;
      std::sort(rows.begin(), rows.end());
      std::vector<int64_t> distinct, from, to;
      for (const auto& [row, position] : rows) {
        if (distinct.empty() || distinct.back() != row) distinct.push_back(row);
        from.push_back(static_cast<int64_t>(distinct.size()) - 1);
        to.push_back(position);
      }
      torch::Tensor got = read_rows(parts_[k], distinct);
      out.index_copy_(0, index_tensor(to), got.index_select(0, index_tensor(from)));
    }
    if (type_.column == torch::kBool) return out.view(torch::kBool);
    if (type_.column != type_.buffer) return out.to(type_.column);
    if (type_.text == "uint64") check_int64_range(out);
    return out;
  }

 private:
  /// Rows `rows` (sorted, distinct) of one part: runs of consecutive rows OR-ed into one
  /// hyperslab selection, read in one H5Dread.
  torch::Tensor read_rows(const Hdf5Part& part, const std::vector<int64_t>& rows) const {
    std::vector<int64_t> sizes = shape();
    sizes[0] = static_cast<int64_t>(rows.size());
    torch::Tensor got = torch::empty(sizes, type_.buffer);
    if (got.numel() == 0) return got;
    std::vector<hsize_t> start(sizes.size(), 0), count(sizes.begin(), sizes.end());
    Hdf5Lock lock;
    const Hid file_space(H5Dget_space(part.dataset->get()), H5Sclose);
    herr_t rc = file_space.get() >= 0 ? 0 : -1;
    for (size_t j = 0; j < rows.size() && rc >= 0;) {
      size_t end = j + 1;
      while (end < rows.size() && rows[end] == rows[end - 1] + 1) ++end;
      start[0] = static_cast<hsize_t>(rows[j]);
      count[0] = end - j;
      rc = H5Sselect_hyperslab(file_space.get(), j == 0 ? H5S_SELECT_SET : H5S_SELECT_OR,
                               start.data(), nullptr, count.data(), nullptr);
      j = end;
    }
    const std::vector<hsize_t> memory_dims(sizes.begin(), sizes.end());
    const Hid memory_space(
        H5Screate_simple(static_cast<int>(memory_dims.size()), memory_dims.data(), nullptr),
        H5Sclose);
    if (rc >= 0) {
      rc = H5Dread(part.dataset->get(), type_.memory->get(), memory_space.get(), file_space.get(),
                   H5P_DEFAULT, got.data_ptr());
    }
    UT_CHECK(rc >= 0, "hdf5: cannot read rows of '", part.path, "' dataset '", dataset_,
             "': ", hdf5_error_text(), " (is the file damaged or truncated?)");
    return got;
  }

  void check_int64_range(const torch::Tensor& values) const {
    torch::Tensor beyond = values.lt(0);  // uint64 values from 2^63 on, read as int64
    if (!beyond.any().item<bool>()) return;
    const auto value = static_cast<uint64_t>(values.masked_select(beyond)[0].item<int64_t>());
    throw ConfigError(detail::concat(
        "hdf5: ", name(), " holds the uint64 value ", value,
        ", beyond int64 (LibTorch has no uint64 type); store the dataset as int64, or as "
        "float64 if the values need not be exact"));
  }

  std::string dataset_;
  std::vector<Hdf5Part> parts_;
  ElementType type_;
};

/// Dataset `name` of `file` (`path`), open. ConfigError listing the file's datasets when it
/// has none of that name.
std::shared_ptr<const Hid> open_dataset(hid_t file, const std::string& path,
                                        const std::string& name, const std::string& key) {
  Hdf5Lock lock;
  const hid_t object = H5Oopen(file, name.c_str(), H5P_DEFAULT);
  const bool dataset = object >= 0 && H5Iget_type(object) == H5I_DATASET;
  if (object >= 0 && !dataset) H5Oclose(object);
  H5Eclear2(H5E_DEFAULT);
  UT_CHECK(dataset, "hdf5: '", path, "' has no dataset '", name, "' (datasets.", key,
           object >= 0 ? "; that is a group" : "", "); it holds: ", hdf5_datasets_listed(file));
  return std::make_shared<const Hid>(object, H5Oclose);
}

/// Dataset `name` in every file, checked to agree on trailing shape and type.
std::shared_ptr<const Hdf5Column> open_column(
    const std::vector<std::pair<std::string, std::shared_ptr<const Hid>>>& files,
    const std::string& name, const std::string& key) {
  std::vector<Hdf5Part> parts;
  std::optional<ElementType> type;
  std::vector<int64_t> shape;
  int64_t rows = 0;
  for (const auto& [path, file] : files) {
    Hdf5Part part{path, open_dataset(file->get(), path, name, key), {}, rows};
    const std::string where = "hdf5: '" + path + "' dataset '" + name + "'";
    Hdf5Lock lock;
    const Hid space(H5Dget_space(part.dataset->get()), H5Sclose);
    const Hid file_type(H5Dget_type(part.dataset->get()), H5Tclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    UT_CHECK(rank >= 0 && file_type.get() >= 0, where, ": cannot read its shape and type (",
             hdf5_error_text(), ")");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    part.shape.assign(dims.begin(), dims.end());
    ElementType t = element_type(file_type.get(), where);
    if (!type) {
      type = t;
      shape = part.shape;
    }
    const auto trailing = [](const std::vector<int64_t>& s) {
      return std::vector<int64_t>(s.begin() + std::min<size_t>(1, s.size()), s.end());
    };
    UT_CHECK(trailing(part.shape) == trailing(shape) && t.text == type->text, "hdf5: dataset '",
             name, "' is ", numpy_shape_text(shape), " ", type->text, " in '", files.front().first,
             "' but ", numpy_shape_text(part.shape), " ", t.text, " in '", path,
             "'; files are concatenated along the first dimension, so the other dimensions and "
             "the type must agree");
    rows += part.shape.empty() ? 0 : part.shape[0];
    parts.push_back(std::move(part));
  }
  if (!shape.empty()) shape[0] = rows;
  std::string label = "'" + files.front().first + "'";
  if (files.size() > 1) label += " (and " + std::to_string(files.size() - 1) + " more files)";
  return std::make_shared<const Hdf5Column>(label + " dataset '" + name + "'", name,
                                            std::move(parts), std::move(shape), std::move(*type));
}

}  // namespace

void Hdf5Options::declare(Options<Hdf5Options>& o) {
  o.field("paths", &Hdf5Options::paths)
      .required()
      .help(
          "HDF5 files (e.g. written by h5py), one or several: their rows are concatenated in "
          "this order");
  declare_named_strings(o, "datasets", &Hdf5Options::datasets, "{x: /images, y: /labels}")
      .required()
      .help(
          "batch key -> dataset path inside each file, e.g. {x: /images, y: /labels}; every "
          "dataset's first dimension counts the examples");
  declare_array_dtypes(o);
  declare_array_num_classes(o);
}

DatasetPtr load_hdf5(const Hdf5Options& o) {
  UT_CHECK(!o.paths.empty(), "hdf5: paths is empty; give one or more HDF5 files");
  std::vector<std::pair<std::string, std::shared_ptr<const Hid>>> files;
  for (size_t f = 0; f < o.paths.size(); ++f) {
    const std::string& path = o.paths[f];
    require_file(path, "hdf5: paths[" + std::to_string(f) + "]");
    Hdf5Lock lock;
    const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    UT_CHECK(id >= 0, "hdf5: cannot open '", path, "' as an HDF5 file (", hdf5_error_text(),
             "); is it one? h5py writes them with h5py.File(path, 'w')");
    files.emplace_back(path, std::make_shared<const Hid>(id, H5Fclose));
  }
  ArrayColumns columns;
  std::vector<std::shared_ptr<const Hdf5Column>> opened;
  for (const auto& [key, name] : o.datasets) {
    opened.push_back(open_column(files, name, key));
    columns.emplace_back(key, opened.back());
  }
  // Rows of one file must line up across keys, not only the totals.
  for (size_t k = 1; k < opened.size(); ++k) {
    for (size_t f = 0; f < files.size(); ++f) {
      const Hdf5Part& a = opened.front()->parts()[f];
      const Hdf5Part& b = opened[k]->parts()[f];
      const int64_t a_rows = a.shape.empty() ? 0 : a.shape[0];
      const int64_t b_rows = b.shape.empty() ? 0 : b.shape[0];
      UT_CHECK(a_rows == b_rows, "hdf5: '", a.path, "' dataset '", o.datasets[k].second, "' (key ",
               o.datasets[k].first, ") has ", b_rows, " rows but dataset '",
               o.datasets.front().second, "' (key ", o.datasets.front().first, ") has ", a_rows,
               "; every dataset's first dimension counts the examples, so they must agree");
    }
  }
  return std::make_shared<ArrayDataset>("hdf5", std::move(columns), o.dtypes, o.num_classes);
}

void register_hdf5_dataset() {
  dataset_registry().add<Hdf5Options>("hdf5",
                                      "datasets of HDF5 files (h5py), concatenated over files "
                                      "and read row by row: each key's rows, dtype kept or "
                                      "converted",
                                      load_hdf5);
}

}  // namespace unitrain
