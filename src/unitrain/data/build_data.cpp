#include "unitrain/data/build_data.h"

#include <spdlog/spdlog.h>

#include "unitrain/core/error.h"
#include "unitrain/data/loader.h"
#include "unitrain/data/normalize_dataset.h"
#include "unitrain/data/subset_dataset.h"

namespace unitrain {
namespace {

std::shared_ptr<const Schema> normalize_schema() {
  auto s = std::make_shared<Schema>();
  s->add("enabled", Type::Bool)
      .def(false)
      .help("normalize `key` of every split by the train statistics");
  s->add("key", Type::String).def("x").help("the example tensor to normalize");
  s->add("mean", Type::FloatList)
      .def("[]")
      .help("one per channel (dim 0 of the example); [] = computed on the train split");
  s->add("std", Type::FloatList)
      .def("[]")
      .help("one per channel; [] = computed on the train split");
  return s;
}

// Builds the dataset of component section `key`; its errors are prefixed with the key.
DatasetPtr build_dataset(const Config& data, const std::string& key) {
  const Config section = data.at(key);
  try {
    return dataset_registry().create(section);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.rfind(section.path(), 0) == 0) throw;
    throw ConfigError(section.path() + ": " + what);
  }
}

}  // namespace

std::shared_ptr<const Schema> data_section_schema() {
  register_builtin_datasets();  // resolving the section looks the dataset types up
  static const auto schema = [] {
    auto s = std::make_shared<Schema>();
    s->add("train", Type::Section)
        .component("dataset")
        .nullable()
        .help("the training dataset (required by `unitrain train`; library users pass data to fit)");
    s->add("val", Type::Section)
        .component("dataset")
        .nullable()
        .help("the validation dataset; null = none, or split off train by validation_ratio");
    s->add("test", Type::Section)
        .component("dataset")
        .nullable()
        .help("the test dataset, evaluated after training");
    s->add("validation_ratio", Type::Float)
        .def(0.0)
        .min(0)
        .lt(1)
        .help("fraction of train held out as val by a seeded random split, in [0, 1); 0 = none");
    s->add("normalize", Type::Section)
        .section(normalize_schema())
        .help("per-channel (x - mean) / std");
    s->add("loader", Type::Section)
        .section(LoaderOptions::schema())
        .help("batching and reader threads");
    return std::shared_ptr<const Schema>(s);
  }();
  return schema;
}

DataSplits build_data(const Config& data_section, uint64_t seed) {
  register_builtin_datasets();
  const Config data = data_section_schema()->resolve(data_section);
  DataSplits out;
  UT_CHECK(data.has("train"), "missing key ", data.key_path("train"),
           ": give a training dataset, e.g. {type: csv, args: {path: ..., target: ...}}");
  out.train = build_dataset(data, "train");
  if (data.has("val")) out.val = build_dataset(data, "val");
  if (data.has("test")) out.test = build_dataset(data, "test");

  const double ratio = data.get_double("validation_ratio");
  UT_CHECK(ratio < 1, data.key_path("validation_ratio"), " must be in [0, 1), got ", ratio);
  if (ratio > 0) {
    UT_CHECK(!out.val, data.key_path("val"), " and ", data.key_path("validation_ratio"),
             " are both set; give a val dataset or split train, not both");
    Split split = random_split(out.train, ratio, seed, data.key_path("validation_ratio"));
    out.train = split.rest;
    out.val = split.held_out;
  }

  const Config norm = data.at("normalize");
  if (norm.get_bool("enabled")) {
    const std::string key = norm.get_string("key");
    std::vector<double> mean = norm.get_double_list("mean");
    std::vector<double> std = norm.get_double_list("std");
    if (mean.empty() || std.empty()) {
      ChannelStats stats;
      try {
        stats = channel_stats(*out.train, key);
      } catch (const ConfigError& e) {
        throw ConfigError(norm.key_path("key") + ": " + e.what());
      }
      if (mean.empty()) mean = stats.mean;
      if (std.empty()) std = stats.std;
      spdlog::info("{}: {} channel(s) of '{}' normalized with train statistics", norm.path(),
                   mean.size(), key);
    }
    out.normalize_mean = mean;
    out.normalize_std = std;
    auto wrap = [&](DatasetPtr& d) {
      if (d) d = std::make_shared<NormalizeDataset>(d, key, mean, std, norm.path());
    };
    wrap(out.train);
    wrap(out.val);
    wrap(out.test);
  }
  spdlog::info("{}: {} train, {} val, {} test examples", data.path().empty() ? "data" : data.path(),
               out.train->size(), out.val ? out.val->size() : 0, out.test ? out.test->size() : 0);
  return out;
}

}  // namespace unitrain
