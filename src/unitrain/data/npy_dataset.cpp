#include "unitrain/data/npy_dataset.h"

#include <torch/torch.h>

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/core/mapped_file.h"
#include "unitrain/data/npy_format.h"
#include "unitrain/data/tensor_dataset.h"
#include "unitrain/data/zip_archive.h"

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

std::shared_ptr<const ArrayColumn> npy_column(const std::string& kind, const std::string& name,
                                              const unsigned char* npy, size_t size,
                                              std::shared_ptr<const void> keepalive,
                                              bool in_memory) {
  const NpyHeader h = parse_npy_header(npy, size, kind + ": " + name);
  return std::make_shared<NpyColumn>(name, h, npy, std::move(keepalive), in_memory);
}

std::string single_quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

void NpyOptions::declare(Options<NpyOptions>& o) {
  declare_named_strings(o, "arrays", &NpyOptions::arrays, "{x: images.npy, y: labels.npy}")
      .required()
      .help(
          "batch key -> .npy file written by np.save, e.g. {x: images.npy, y: labels.npy}; "
          "memory-mapped; every array's first dimension counts the examples");
  declare_array_dtypes(o);
}

void NpzOptions::declare(Options<NpzOptions>& o) {
  o.field("path", &NpzOptions::path)
      .required()
      .help("the .npz archive written by np.savez or np.savez_compressed");
  declare_named_strings(o, "arrays", &NpzOptions::arrays, "{x: images, y: labels}")
      .nullable()
      .help(
          "batch key -> array name in the archive (its keyword in np.savez), e.g. {x: images, "
          "y: labels}; null = every array under its own name");
  declare_array_dtypes(o);
}

DatasetPtr load_npy(const NpyOptions& o) {
  ArrayColumns columns;
  for (const auto& [key, path] : o.arrays) {
    const MappedFile file(path, "npy: arrays." + key);
    columns.emplace_back(key, npy_column("npy", single_quoted(path), file.data(), file.size(),
                                         file.keepalive(), file.small()));
  }
  return std::make_shared<ArrayDataset>("npy", std::move(columns), o.dtypes);
}

DatasetPtr load_npz(const NpzOptions& o) {
  const MappedFile file(o.path, "npz: path");
  const std::vector<ZipEntry> entries =
      read_zip_directory(file.data(), file.size(), "npz: " + single_quoted(o.path));
  auto array_name = [](const std::string& member) {
    const size_t n = std::char_traits<char>::length(kNpzSuffix);
    const bool npy = member.size() > n && member.compare(member.size() - n, n, kNpzSuffix) == 0;
    return npy ? member.substr(0, member.size() - n) : member;
  };
  NamedStrings wanted = o.arrays;
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
      throw ConfigError(detail::concat("npz: ", single_quoted(o.path), " has no array '", name,
                                       "' (arrays.", key, ")",
                                       hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                                       "; it holds: ", list.empty() ? "nothing" : list));
    }
    const std::string where = single_quoted(o.path) + " array " + single_quoted(name);
    if (it->method == 0) {
      columns.emplace_back(key, npy_column("npz", where, file.data() + it->data_offset,
                                           it->uncompressed_size, file.keepalive(), file.small()));
    } else {
      auto inflated = inflate_zip_entry(file.data(), *it, "npz: " + single_quoted(o.path));
      columns.emplace_back(
          key, npy_column("npz", where, inflated->data(), inflated->size(), inflated, true));
    }
  }
  return std::make_shared<ArrayDataset>("npz", std::move(columns), o.dtypes);
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
