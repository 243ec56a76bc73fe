#pragma once
// The `npy` and `npz` datasets: arrays saved by NumPy (np.save, np.savez, np.savez_compressed).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/array_dataset.h"

namespace unitrain {

/// Settings of the `npy` dataset (its `args`).
struct NpyOptions {
  NamedStrings arrays;  ///< batch key -> .npy file or glob of shards, e.g. {x: x_*.npy, y: y_*.npy}
  NamedStrings dtypes;  ///< batch key -> dtype to convert to; keys not named keep theirs
  std::vector<std::string> classes;    ///< a string array's class names in index order
  std::optional<int64_t> num_classes;  ///< unset: y's largest label + 1, for y up to 64 MiB

  static void declare(Options<NpyOptions>& o);
};

/// Settings of the `npz` dataset (its `args`).
struct NpzOptions {
  std::string path;                ///< the .npz archive, or a glob of shards (sorted by name)
  std::vector<std::string> paths;  ///< shards, in this order (instead of path)
  NamedStrings arrays;  ///< batch key -> array name in it; empty = every array under its name
  NamedStrings dtypes;  ///< batch key -> dtype to convert to; keys not named keep theirs
  std::vector<std::string> classes;    ///< a string array's class names in index order
  std::optional<int64_t> num_classes;  ///< unset: y's largest label + 1, for y up to 64 MiB

  static void declare(Options<NpzOptions>& o);
};

/// An ArrayDataset over .npy files, one a key, or shards: each key's value is then a glob
/// whose matches, sorted by name, are that key's shards; shard i of every key holds the same
/// examples (file i of each glob, with as many rows), and the rows are shard 0's, then shard
/// 1's, and so on (concatenate_array_shards). Each file is memory-mapped, not read: files
/// larger than memory work and a batch reads only its rows' pages. C and Fortran order,
/// little- and big-endian b1, i1, u1, i2, u2, i4, u4, i8, u8, f2, f4, f8 (parse_npy_header);
/// uint16 is read as int32, uint32 and uint64 as int64 (a uint64 value beyond int64 is a
/// ConfigError when read). A 1-D string array (NumPy's '<U', '|S': labels as names) is read
/// into memory as int64 class indices of its names in `classes` order, or sorted when `classes`
/// is empty (with shards, `classes` must be given); `y`'s names are the dataset's
/// class_names(). ConfigError naming the file for the errors of parse_npy_header,
/// concatenate_array_shards and ArrayDataset, a string array of more than one dimension, a
/// name not in `classes` (naming the row), a glob that matches no file, and globs matching
/// different numbers of files.
///
/// Example: `load_npy({.arrays = {{"x", "images.npy"}, {"y", "labels.npy"}}})`.
DatasetPtr load_npy(const NpyOptions& options);

/// An ArrayDataset over the arrays of one .npz archive (read_zip_directory), or of shards
/// (`path` a glob, sorted by name, or `paths`): each archive holds every key's array for its
/// examples, and the rows are the first archive's, then the second's, and so on
/// (concatenate_array_shards). Stored members (np.savez) are read in place from the mapped
/// archive like .npy files; compressed members (np.savez_compressed) are inflated into memory
/// once, when built. ConfigError naming the archive and the array, listing the arrays it holds
/// when a name is not among them (with `arrays` empty, the first archive's arrays are read from
/// every shard).
DatasetPtr load_npz(const NpzOptions& options);

/// Registers datasets `npy` and `npz` (names, help, args, factories) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_npy_datasets();

}  // namespace unitrain
