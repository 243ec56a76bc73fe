#pragma once
// build_data: the datasets of a run from its `data` section.
#include <cstdint>
#include <memory>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/schema.h"
#include "unitrain/data/dataset.h"

namespace unitrain {

/// The datasets of a run, built from the `data` section: train, and val/test when given or
/// split off train by `validation_ratio` (a seeded random split), with `normalize` applied.
struct DataSplits {
  DatasetPtr train;
  DatasetPtr val;   ///< may be null
  DatasetPtr test;  ///< may be null
  /// The per-channel statistics `normalize` applied (those given, or computed on train);
  /// empty when it is off.
  std::vector<double> normalize_mean, normalize_std;
};
DataSplits build_data(const Config& data_section, uint64_t seed);

/// The schema of the `data` section (train, val, test, validation_ratio, normalize, loader).
std::shared_ptr<const Schema> data_section_schema();

}  // namespace unitrain
