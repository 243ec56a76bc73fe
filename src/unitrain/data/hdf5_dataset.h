#pragma once
// The `hdf5` dataset: datasets inside HDF5 files (h5py, HDF5's C API), read row by row.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/array_dataset.h"

namespace unitrain {

/// Settings of the `hdf5` dataset (its `args`).
struct Hdf5Options {
  std::vector<std::string> paths;      ///< HDF5 files, concatenated along the first dimension
  NamedStrings datasets;               ///< batch key -> dataset path in each file: {x: /images}
  NamedStrings dtypes;                 ///< batch key -> dtype to convert to; others kept
  std::optional<int64_t> num_classes;  ///< unset: y's largest label + 1, for y up to 64 MiB

  static void declare(Options<Hdf5Options>& o);
};

/// An ArrayDataset over HDF5 datasets: key k's rows are those of dataset `datasets[k]` of
/// each file in `paths`, in that order. A batch reads only its rows (one hyperslab selection
/// per file and key, the rows sorted, then put back in the batch's order), so files larger
/// than memory work. Integer, float and h5py's boolean types of any byte order; uint16 is
/// read as int32, uint32 and uint64 as int64 (a uint64 value beyond int64 is a ConfigError
/// when read). HDF5 calls are serialised by one process-wide mutex when the HDF5 library is
/// not built thread-safe (Debian's is: H5is_library_threadsafe). ConfigError naming the file
/// and the dataset when a file is missing or not HDF5, a dataset is missing (listing those the
/// file holds) or of another type (compound, string, ...), files disagree on a dataset's
/// trailing shape or type, or a file's datasets disagree on their number of rows.
DatasetPtr load_hdf5(const Hdf5Options& options);

/// Registers dataset `hdf5` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_hdf5_dataset();

}  // namespace unitrain
