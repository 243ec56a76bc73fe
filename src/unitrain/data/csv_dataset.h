#pragma once
// The `csv` dataset: numeric columns of a delimited text file (plain or .gz).
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// Settings of the `csv` dataset (its `args`).
struct CsvOptions {
  std::string path;
  std::string target;                 ///< column name, or index ("64", "-1" = last)
  std::vector<std::string> features;  ///< names or indices; empty = every other column
  std::string target_type = "class";  ///< class (int64 index) | float (regression, [1])
  std::string delimiter = ",";        ///< one character
  bool header = true;                 ///< false: columns are named "0", "1", ...
  int64_t skip_rows = 0;              ///< lines skipped before the header / first row
  /// Class names in index order, for a class target of names (`cat`, `dog`); empty = the
  /// sorted names the file holds (data.val and data.test take data.train's).
  std::vector<std::string> classes;

  static void declare(Options<CsvOptions>& o);
};

/// Reads a CSV into a TensorDataset with `x` float32 [F] and `y` (int64 [] for class targets,
/// float32 [1] for float targets); info: num_features, and num_classes for class targets.
/// A class target of names (any cell not a whole number >= 0, or `classes` given) becomes the
/// names' indices in `classes` (or in their sorted order), which class_names() returns; a name
/// not in `classes` is a ConfigError naming the line, the name and the classes.
/// Only the selected columns must be numeric. ConfigError naming the file when it is missing or
/// empty; naming the file, line and column (name and number) for a non-numeric cell, a negative
/// or fractional class, or a row with the wrong number of cells; listing the columns for an
/// unknown target/feature.
DatasetPtr load_csv(const CsvOptions& options);

/// Registers dataset `csv` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_csv_dataset();

}  // namespace unitrain
