#pragma once
// Class targets given as names (a CSV column of `cat`, `dog`; a NumPy string array): the names
// numbered as class indices.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace unitrain {

/// Names numbered: `classes` in index order and each name's index.
struct IndexedClasses {
  std::vector<std::string> classes;
  std::vector<int64_t> indices;  ///< one per name, in order
};

/// Numbers `names` by `given` (its order; names outside it are errors) or, when `given` is
/// empty, by the sorted distinct names. ConfigError for an empty name or one not in `given`,
/// its place said by `where(i)` (e.g. "csv: 'pets.csv' line 4, column 2 ('kind')").
IndexedClasses index_class_names(const std::vector<std::string>& names,
                                 const std::vector<std::string>& given,
                                 const std::function<std::string(size_t)>& where);

}  // namespace unitrain
