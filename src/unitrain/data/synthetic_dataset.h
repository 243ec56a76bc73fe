#pragma once
// The `synthetic` dataset: seeded random data that a model can learn, for tests and benchmarks.
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// Settings of the `synthetic` dataset (its `args`).
struct SyntheticOptions {
  std::string task = "classification";  ///< classification | regression
  int64_t n = 1000;                     ///< number of examples
  int64_t features = 16;                ///< x is [features] unless `shape` is given
  std::vector<int64_t> shape;           ///< x's shape, e.g. [1, 28, 28]; overrides features
  int64_t classes = 2;                  ///< classification
  int64_t outputs = 1;                  ///< regression: y is float32 [outputs]
  double noise = 0.1;                   ///< regression: std of the Gaussian noise added to y
  uint64_t seed = 0;

  static void declare(Options<SyntheticOptions>& o);
};

/// x ~ N(0, 1) float32 of `shape` (or [features]). A fixed random linear map W (drawn first, so
/// it does not depend on n) defines the target: classification y = argmax(flat(x) W) as int64
/// []; regression y = flat(x) W / sqrt(F) + noise * N(0, 1) as float32 [outputs]. Drawn from
/// a private generator seeded by `seed`: the same options give the same data, and the global
/// torch RNG is untouched. info: num_features, and num_classes for classification.
DatasetPtr make_synthetic(const SyntheticOptions& options);

/// Registers dataset `synthetic` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_synthetic_dataset();

}  // namespace unitrain
