#include "unitrain/data/npy_dataset.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/mapped_file.h"
#include "unitrain/data/array_shards.h"
#include "unitrain/data/class_names.h"
#include "unitrain/data/formats/npy_format.h"
#include "unitrain/data/formats/zip_archive.h"
#include "unitrain/data/shard_paths.h"
#include "unitrain/data/tensor_dataset.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the npy reader swaps big-endian ('>') arrays for a little-endian host");

namespace unitrain {
namespace {

constexpr const char* kNpzSuffix = ".npy";

/// The LibTorch type an element's bytes are read as: same size, signed for unsigned types
/// (widened afterwards, see widen_unsigned).
torch::ScalarType storage_type(const NpyDtype& d) {
  switch (d.kind) {
    case 'b':
      return torch::kBool;
    case 'f':
      return d.itemsize == 2 ? torch::kHalf : d.itemsize == 4 ? torch::kFloat32 : torch::kFloat64;
    case 'u':
      if (d.itemsize == 1) return torch::kUInt8;
      [[fallthrough]];
    default:
      return d.itemsize == 1   ? torch::kInt8
             : d.itemsize == 2 ? torch::kInt16
             : d.itemsize == 4 ? torch::kInt32
                               : torch::kInt64;
  }
}

/// What read() returns: the storage type, widened for uint16 and uint32; uint64 as int64.
torch::ScalarType column_type(const NpyDtype& d) {
  if (d.kind == 'u' && d.itemsize == 2) return torch::kInt32;
  if (d.kind == 'u' && d.itemsize == 4) return torch::kInt64;
  return storage_type(d);
}

/// One array of a .npy file or an npz member, read in place from `data`: rows are gathered
/// as bytes (any alignment: npz members start anywhere), swapped when big-endian, then viewed
/// as their type.
class NpyColumn : public ArrayColumn {
 public:
  NpyColumn(std::string name, const NpyHeader& h, const unsigned char* npy,
            std::shared_ptr<const void> keepalive, bool in_memory)
      : ArrayColumn(std::move(name), h.shape, column_type(h.dtype)),
        dtype_(h.dtype),
        keepalive_(std::move(keepalive)),
        in_memory_(in_memory) {
    // A byte view [shape..., itemsize] with the array's strides: C order (last index
    // fastest) or Fortran order (first index fastest).
    std::vector<int64_t> sizes = h.shape;
    sizes.push_back(dtype_.itemsize);
    std::vector<int64_t> strides(sizes.size(), 1);
    int64_t step = dtype_.itemsize;
    const auto dims = static_cast<int64_t>(h.shape.size());
    for (int64_t k = 0; k < dims; ++k) {
      const int64_t d = h.fortran_order ? k : dims - 1 - k;
      strides[d] = step;
      step *= std::max<int64_t>(h.shape[d], 1);
    }
    bytes_ = torch::from_blob(const_cast<unsigned char*>(npy + h.data_offset), sizes, strides,
                              torch::kUInt8);
  }

  torch::Tensor read(const std::vector<int64_t>& indices) const override {
    torch::Tensor rows = bytes_.index_select(0, index_tensor(indices));
    if (dtype_.big_endian && dtype_.itemsize > 1) rows = rows.flip({-1});
    torch::Tensor values = rows.view(storage_type(dtype_)).squeeze(-1);
    if (dtype_.kind != 'u' || dtype_.itemsize == 1) return values;
    if (dtype_.itemsize == 2) return values.to(torch::kInt32).bitwise_and_(0xFFFF);
    if (dtype_.itemsize == 4) return values.to(torch::kInt64).bitwise_and_(int64_t{0xFFFFFFFF});
    torch::Tensor beyond = values.lt(0);  // uint64 values from 2^63 on, read as int64
    if (beyond.any().item<bool>()) {
      const auto value = static_cast<uint64_t>(values.masked_select(beyond)[0].item<int64_t>());
      throw ConfigError(detail::concat(
          name(), ": holds the uint64 value ", value,
          ", beyond int64 (LibTorch has no uint64 type); save the array as int64, or as "
          "float64 if the values need not be exact"));
    }
    return values;
  }

  bool in_memory() const override { return in_memory_; }

 private:
  NpyDtype dtype_;
  std::shared_ptr<const void> keepalive_;  ///< the mapped file or inflated member
  torch::Tensor bytes_;                    ///< uint8 over the elements' bytes, not owning them
  bool in_memory_;
};

/// Element `i` of a string array: UTF-32 code units ('U') or bytes ('S'), NumPy's trailing
/// NULs dropped; text as UTF-8.
std::string string_element(const NpyHeader& h, const unsigned char* npy, int64_t i) {
  const unsigned char* p = npy + h.data_offset + static_cast<size_t>(i) * h.dtype.itemsize;
  std::string out;
  if (h.dtype.kind == 'S') {
    out.assign(reinterpret_cast<const char*>(p), h.dtype.itemsize);
  } else {
    for (int k = 0; k < h.dtype.itemsize; k += 4) {
      const unsigned char* u = p + k;
      const uint32_t c =
          h.dtype.big_endian
              ? (uint32_t(u[0]) << 24 | uint32_t(u[1]) << 16 | uint32_t(u[2]) << 8 | u[3])
              : (uint32_t(u[3]) << 24 | uint32_t(u[2]) << 16 | uint32_t(u[1]) << 8 | u[0]);
      if (c == 0) break;
      hf::append_utf8(out, static_cast<char32_t>(c));
    }
  }
  return out.substr(0, out.find('\0'));
}

/// A 1-D string array as class indices, held in memory, with the names they stand for.
class ClassNameColumn : public ArrayColumn {
 public:
  ClassNameColumn(std::string name, torch::Tensor indices, std::vector<std::string> classes)
      : ArrayColumn(std::move(name), {indices.size(0)}, torch::kInt64),
        indices_(std::move(indices)),
        classes_(std::move(classes)) {}

  torch::Tensor read(const std::vector<int64_t>& rows) const override {
    return indices_.index_select(0, index_tensor(rows));
  }
  bool in_memory() const override { return true; }
  std::vector<std::string> class_names() const override { return classes_; }

 private:
  torch::Tensor indices_;
  std::vector<std::string> classes_;
};

std::shared_ptr<const ArrayColumn> class_name_column(const std::string& kind,
                                                     const std::string& name, const NpyHeader& h,
                                                     const unsigned char* npy,
                                                     const std::vector<std::string>& classes) {
  UT_CHECK(h.shape.size() == 1, kind, ": ", name, " holds strings (dtype '", h.dtype.descr,
           "') of shape ", numpy_shape_text(h.shape),
           "; strings are read as class names, one per example: save a 1-D array of them");
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(h.shape[0]));
  for (int64_t i = 0; i < h.shape[0]; ++i) names.push_back(string_element(h, npy, i));
  IndexedClasses indexed = index_class_names(
      names, classes, [&](size_t i) { return detail::concat(kind, ": ", name, " row ", i); });
  spdlog::info("{}: {} holds class names: {} classes ({})", kind, name, indexed.classes.size(),
               some_names(indexed.classes));
  torch::Tensor t = torch::tensor(indexed.indices, torch::kInt64);
  return std::make_shared<ClassNameColumn>(name, std::move(t), std::move(indexed.classes));
}

std::shared_ptr<const ArrayColumn> npy_column(const std::string& kind, const std::string& name,
                                              const unsigned char* npy, size_t size,
                                              std::shared_ptr<const void> keepalive, bool in_memory,
                                              const std::vector<std::string>& classes) {
  const NpyHeader h = parse_npy_header(npy, size, kind + ": " + name);
  if (h.dtype.kind == 'U' || h.dtype.kind == 'S') {
    return class_name_column(kind, name, h, npy, classes);
  }
  return std::make_shared<NpyColumn>(name, h, npy, std::move(keepalive), in_memory);
}

std::string single_quoted(const std::string& s) { return "'" + s + "'"; }

/// The arrays `wanted` (batch key -> array name; empty = every array under its own name, and
/// then set to them) of the archive at `path`.
ArrayColumns npz_columns(const std::string& path, const std::string& key_name, NamedStrings& wanted,
                         const std::vector<std::string>& classes) {
  const MappedFile file(path, "npz: " + key_name);
  const std::vector<ZipEntry> entries =
      read_zip_directory(file.data(), file.size(), "npz: " + single_quoted(path));
  auto array_name = [](const std::string& member) {
    const size_t n = std::char_traits<char>::length(kNpzSuffix);
    const bool npy = member.size() > n && member.compare(member.size() - n, n, kNpzSuffix) == 0;
    return npy ? member.substr(0, member.size() - n) : member;
  };
  std::vector<std::string> held;
  for (const ZipEntry& e : entries) held.push_back(array_name(e.name));
  if (wanted.empty()) {
    for (const std::string& name : held) wanted.emplace_back(name, name);
  }
  ArrayColumns columns;
  for (const auto& [key, wanted_name] : wanted) {
    const std::string name = array_name(wanted_name);
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const ZipEntry& e) { return array_name(e.name) == name; });
    if (it == entries.end()) {
      const std::string hint = closest_match(name, held);
      std::string list;
      for (const std::string& h : held) list += (list.empty() ? "" : ", ") + h;
      throw ConfigError(detail::concat("npz: ", single_quoted(path), " has no array '", name,
                                       "' (arrays.", key, ")",
                                       hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                                       "; it holds: ", list.empty() ? "nothing" : list));
    }
    const std::string where = single_quoted(path) + " array " + single_quoted(name);
    if (it->method == 0) {
      columns.emplace_back(
          key, npy_column("npz", where, file.data() + it->data_offset, it->uncompressed_size,
                          file.keepalive(), file.small(), classes));
    } else {
      auto inflated = inflate_zip_entry(file.data(), *it, "npz: " + single_quoted(path));
      columns.emplace_back(key, npy_column("npz", where, inflated->data(), inflated->size(),
                                           inflated, true, classes));
    }
  }
  return columns;
}

template <typename T>
void declare_array_classes(Options<T>& o) {
  o.field("classes", &T::classes)
      .help(
          "a string array (labels as names, NumPy dtype <U or S): the names in index order; [] = "
          "the sorted names it holds (data.val and data.test take data.train's)");
}

}  // namespace

void NpyOptions::declare(Options<NpyOptions>& o) {
  declare_named_strings(o, "arrays", &NpyOptions::arrays, "{x: images.npy, y: labels.npy}")
      .required()
      .help(
          "batch key -> .npy file written by np.save, e.g. {x: images.npy, y: labels.npy}, or a "
          "glob of shards, e.g. {x: x_*.npy, y: y_*.npy}: the n-th file (by name) of each key "
          "holds the same examples; memory-mapped; every array's first dimension counts the "
          "examples");
  declare_array_dtypes(o);
  declare_array_classes(o);
  declare_array_num_classes(o);
}

void NpzOptions::declare(Options<NpzOptions>& o) {
  o.field("path", &NpzOptions::path)
      .help(
          "the .npz archive written by np.savez or np.savez_compressed; or a glob of shard "
          "archives (data/train_*.npz), each holding every key's array, read in name order");
  o.field("paths", &NpzOptions::paths)
      .help("shard archives read as one dataset, in this order (instead of path)");
  declare_named_strings(o, "arrays", &NpzOptions::arrays, "{x: images, y: labels}")
      .nullable()
      .help(
          "batch key -> array name in the archive (its keyword in np.savez), e.g. {x: images, "
          "y: labels}; null = every array under its own name");
  declare_array_dtypes(o);
  declare_array_classes(o);
  declare_array_num_classes(o);
}

DatasetPtr load_npy(const NpyOptions& o) {
  // Each key's files: one, or a glob's matches in name order; shard i is file i of every key.
  std::vector<std::pair<std::string, std::vector<std::string>>> files;
  for (const auto& [key, path] : o.arrays) {
    files.emplace_back(key, shard_paths(path, {}, "npy: arrays." + key));
    const auto& [first_key, first_files] = files.front();
    UT_CHECK(files.back().second.size() == first_files.size(), "npy: arrays.", key, " ('", path,
             "') matches ", files.back().second.size(), " files but arrays.", first_key,
             " matches ", first_files.size(),
             "; the n-th file (by name) of each key is shard n, so every key needs as many");
  }
  std::vector<ArrayColumns> shards(files.empty() ? 0 : files.front().second.size());
  for (size_t s = 0; s < shards.size(); ++s) {
    for (const auto& [key, paths] : files) {
      const MappedFile file(paths[s], "npy: arrays." + key);
      shards[s].emplace_back(key,
                             npy_column("npy", single_quoted(paths[s]), file.data(), file.size(),
                                        file.keepalive(), file.small(), o.classes));
    }
  }
  ArrayColumns columns =
      shards.empty() ? ArrayColumns{}
                     : concatenate_array_shards("npy", std::move(shards), !o.classes.empty());
  return std::make_shared<ArrayDataset>("npy", std::move(columns), o.dtypes, o.num_classes);
}

DatasetPtr load_npz(const NpzOptions& o) {
  NamedStrings wanted = o.arrays;  // with none named, the first archive's, read from every shard
  std::vector<ArrayColumns> shards;
  for (const std::string& path : shard_paths(o.path, o.paths, "npz")) {
    shards.push_back(npz_columns(path, o.paths.empty() ? "path" : "paths", wanted, o.classes));
  }
  ArrayColumns columns = concatenate_array_shards("npz", std::move(shards), !o.classes.empty());
  return std::make_shared<ArrayDataset>("npz", std::move(columns), o.dtypes, o.num_classes);
}

void register_npy_datasets() {
  dataset_registry().add<NpyOptions>("npy",
                                     "NumPy .npy files, one per batch key, memory-mapped: each "
                                     "key's rows, dtype kept or converted",
                                     load_npy);
  dataset_registry().add<NpzOptions>("npz",
                                     "the arrays of a NumPy .npz archive (np.savez, compressed "
                                     "too): each key's rows, dtype kept or converted",
                                     load_npz);
}

}  // namespace unitrain
