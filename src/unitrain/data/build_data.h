#pragma once
// build_data: the datasets of a run from its `data` section.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"
#include "unitrain/data/loader.h"
#include "unitrain/data/permutation.h"

namespace unitrain {

/// `data.normalize`: per-channel (x - mean) / std of example tensor `key` in every split.
struct NormalizeOptions {
  bool enabled = false;
  std::string key = "x";
  std::vector<double> mean;    ///< one per channel; empty = computed on the train split
  std::vector<double> stddev;  ///< `std`; one per channel; empty = computed on the train split

  static void declare(Options<NormalizeOptions>& o);
  static NormalizeOptions from_config(const Config& c) {
    return options_of<NormalizeOptions>().parse(c);
  }
};

/// `data.transforms`: the transform sections of each split, in order (built by the transform
/// registry).
struct SplitTransforms {
  std::vector<Config> train, val, test;

  static void declare(Options<SplitTransforms>& o);
};

/// The `data` section's keys, each declared once in declare(). Its component sections (the
/// datasets, transforms and collate function) are kept as resolved sections: build_data()
/// builds them from their registries.
struct DataOptions {
  std::optional<Config> train, val, test;  ///< dataset sections; unset = none
  double validation_ratio = 0;
  NormalizeOptions normalize;
  SplitTransforms transforms;
  Config collate;            ///< the collate section {type, args}
  std::string collate_type;  ///< its type: stack (the plain batch), pad, mlm, ...
  LoaderOptions loader;

  static void declare(Options<DataOptions>& o);
  static DataOptions from_config(const Config& c) { return options_of<DataOptions>().parse(c); }
};

/// The datasets of a run, built from the `data` section: train, and val/test when given or
/// split off train by `validation_ratio` (a seeded random split by `split`: a resumed run
/// passes its checkpoint's data_order), with `normalize` applied.
struct DataSplits {
  DatasetPtr train;
  DatasetPtr val;   ///< may be null
  DatasetPtr test;  ///< may be null
  /// The per-channel statistics `normalize` applied (those given, or computed on train);
  /// empty when it is off.
  std::vector<double> normalize_mean, normalize_std;
};
DataSplits build_data(const Config& data_section, uint64_t seed,
                      ShuffleAlgorithm split = kCurrentShuffle);

/// The schema of the `data` section (train, val, test, validation_ratio, normalize, loader).
std::shared_ptr<const Schema> data_section_schema();

}  // namespace unitrain
