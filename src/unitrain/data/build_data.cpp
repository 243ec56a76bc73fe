#include "unitrain/data/build_data.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/data/loader.h"
#include "unitrain/data/normalize_dataset.h"
#include "unitrain/data/subset_dataset.h"
#include "unitrain/data/transform.h"

namespace unitrain {
namespace {

// Builds the dataset of component section `section`; its errors are prefixed with its key.
DatasetPtr build_dataset(const std::optional<Config>& section) {
  if (!section) return nullptr;
  try {
    return dataset_registry().create(*section);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.rfind(section->path(), 0) == 0) throw;
    throw ConfigError(section->path() + ": " + what);
  }
}

// A data.val or data.test section whose dataset takes `classes` (csv) and gives none reads class
// names in data.train's order: a split without some class keeps every index's meaning, and a
// name train does not have is an error there.
std::optional<Config> with_classes_of(const std::optional<Config>& section,
                                      const std::vector<std::string>& classes) {
  if (!section || classes.empty()) return section;
  const std::string type = section->get_string("type"), type_key = section->key_path("type");
  const ComponentInfo& info = catalog::find(dataset_registry().kind(), type, type_key);
  if (!info.args->find("classes") ||
      (section->has("args.classes") && !section->get_string_list("args.classes").empty())) {
    return section;
  }
  Config out = *section;
  out.set("args.classes", nlohmann::json(classes).dump());  // JSON: a YAML flow list
  return out;
}

// `other` (data.val or data.test) must name its classes as train does: with image_folder, a
// class folder missing from one split would shift the other classes' indices.
void check_same_classes(const Config& data, const DatasetPtr& train, const DatasetPtr& other,
                        const std::string& key) {
  if (!other) return;
  const std::vector<std::string> a = train->class_names(), b = other->class_names();
  if (a.empty() || b.empty() || a == b) return;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const auto name = [](const std::vector<std::string>& v, size_t k) {
    return k < v.size() ? "'" + v[k] + "'" : std::string("none");
  };
  throw ConfigError(
      detail::concat(data.key_path(key), ": its classes differ from ", data.key_path("train"),
                     "'s (", a.size(), " and ", b.size(), " classes; class ", i, " is ", name(a, i),
                     " in train and ", name(b, i), " in ", key,
                     "), so a class index would not mean the same class: give both splits the same "
                     "class folders"));
}

// Wraps each split whose transforms or collate function are not the plain stack. `pad_id`: the
// train dataset's padding id (a tokenizer's; -1 = none), for the pad collate's `pad_value: auto`.
void apply_pipelines(const DataOptions& options, DataSplits& out, int64_t pad_id) {
  CollatePtr collate;
  if (options.collate_type != "stack") {
    Config section = options.collate;
    const YAML::Node value = section.node()["args"]["pad_value"];
    if (options.collate_type == "pad" && value.IsScalar() && value.Scalar() == "auto") {
      section.set("args.pad_value", std::to_string(pad_id >= 0 ? pad_id : 0));
      if (pad_id >= 0) {
        spdlog::info("{}: pad_value {} (the tokenizer's pad id)", section.key_path("args"), pad_id);
      }
    }
    collate = collate_registry().create(section);
  }
  auto wrap = [&](DatasetPtr& d, const std::vector<Config>& sections) {
    std::vector<TransformPtr> transforms;
    for (const Config& t : sections) {
      transforms.push_back(transform_registry().create(t));
    }
    if (d && (collate || !transforms.empty())) {
      d = std::make_shared<TransformedDataset>(d, std::move(transforms), collate);
    }
  };
  wrap(out.train, options.transforms.train);
  wrap(out.val, options.transforms.val);
  wrap(out.test, options.transforms.test);
}

}  // namespace

void NormalizeOptions::declare(Options<NormalizeOptions>& o) {
  using T = NormalizeOptions;
  o.field("enabled", &T::enabled).help("normalize `key` of every split by the train statistics");
  o.field("key", &T::key).help("the example tensor to normalize");
  o.field("mean", &T::mean)
      .help("one per channel (dim 0 of the example); [] = computed on the train split");
  o.field("std", &T::stddev).help("one per channel; [] = computed on the train split");
}

void SplitTransforms::declare(Options<SplitTransforms>& o) {
  using Split = std::pair<const char*, std::vector<Config> SplitTransforms::*>;
  for (const auto& [split, member] :
       {Split{"train", &SplitTransforms::train}, Split{"val", &SplitTransforms::val},
        Split{"test", &SplitTransforms::test}}) {
    o.key(split, Type::SectionList, member)
        .component("transform")
        .section(std::make_shared<Schema>())
        .def("[]")
        .help(std::string("per-example transforms of the ") + split +
              " split, in order, in the loader threads: [{type: random_crop, args: {size: [28], "
              "padding: 4}}, ...]; unitrain list transforms");
  }
}

void DataOptions::declare(Options<DataOptions>& o) {
  using T = DataOptions;
  const char* train_data = "the position in the epoch refers to that training data";
  o.key("train", Type::Section, &T::train)
      .component("dataset")
      .nullable()
      .fixed(train_data)
      .help("the training dataset (required by `unitrain train`; library users pass data to fit)");
  o.key("val", Type::Section, &T::val)
      .component("dataset")
      .nullable()
      .help("the validation dataset; null = none, or split off train by validation_ratio");
  o.key("test", Type::Section, &T::test)
      .component("dataset")
      .nullable()
      .harmless()
      .help("the test dataset, evaluated after training");
  o.field("validation_ratio", &T::validation_ratio)
      .min(0)
      .lt(1)
      .fixed(train_data)
      .help("fraction of train held out as val by a seeded random split, in [0, 1); 0 = none");
  o.section("normalize", &T::normalize).fixed(train_data).help("per-channel (x - mean) / std");
  o.section("transforms", &T::transforms)
      .help("per-example transforms by split; randomness is a function of (seed, epoch, index)");
  o.key("collate", Type::Section, &T::collate)
      .component("collate", "stack")
      .help("how examples become a batch: stack, pad (variable lengths, attention mask), mlm");
  o.section("loader", &T::loader).help("batching and reader threads");
  o.check([](T& d, const Config&) { d.collate_type = component_type(d.collate); });
}

std::shared_ptr<const Schema> data_section_schema() {
  register_builtin_datasets();  // resolving the section looks the dataset types up
  return options_of<DataOptions>().schema();
}

DataSplits build_data(const Config& data_section, uint64_t seed, ShuffleAlgorithm split_by) {
  const Config data = data_section_schema()->resolve(data_section);
  const DataOptions options = DataOptions::from_config(data);
  DataSplits out;
  UT_CHECK(options.train, "missing key ", data.key_path("train"),
           ": give a training dataset, e.g. {type: csv, args: {path: ..., target: ...}}");
  out.train = build_dataset(options.train);
  const std::map<std::string, int64_t> train_info = out.train->info();
  const auto pad = train_info.find("pad_id");
  out.val = build_dataset(with_classes_of(options.val, out.train->class_names()));
  out.test = build_dataset(with_classes_of(options.test, out.train->class_names()));
  check_same_classes(data, out.train, out.val, "val");
  check_same_classes(data, out.train, out.test, "test");

  const double ratio = options.validation_ratio;
  if (ratio > 0) {
    UT_CHECK(!out.val, data.key_path("val"), " and ", data.key_path("validation_ratio"),
             " are both set; give a val dataset or split train, not both");
    Split split = random_split(out.train, ratio, seed, data.key_path("validation_ratio"), split_by);
    out.train = split.rest;
    out.val = split.held_out;
  }

  if (options.normalize.enabled) {
    const std::string norm = data.key_path("normalize");
    const std::string& key = options.normalize.key;
    std::vector<double> mean = options.normalize.mean;
    std::vector<double> std = options.normalize.stddev;
    if (mean.empty() || std.empty()) {
      ChannelStats stats;
      try {
        stats = channel_stats(*out.train, key);
      } catch (const ConfigError& e) {
        throw ConfigError(norm + ".key: " + e.what());
      }
      if (mean.empty()) mean = stats.mean;
      if (std.empty()) std = stats.std;
      spdlog::info("{}: {} channel(s) of '{}' normalized with train statistics", norm, mean.size(),
                   key);
    }
    out.normalize_mean = mean;
    out.normalize_std = std;
    auto wrap = [&](DatasetPtr& d) {
      if (d) d = std::make_shared<NormalizeDataset>(d, key, mean, std, norm);
    };
    wrap(out.train);
    wrap(out.val);
    wrap(out.test);
  }
  apply_pipelines(options, out, pad == train_info.end() ? -1 : pad->second);
  spdlog::info("{}: {} train, {} val, {} test examples", data.path().empty() ? "data" : data.path(),
               out.train->size(), out.val ? out.val->size() : 0, out.test ? out.test->size() : 0);
  return out;
}

}  // namespace unitrain
