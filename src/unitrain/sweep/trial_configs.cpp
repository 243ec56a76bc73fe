#include "unitrain/sweep/trial_configs.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <optional>

#include "unitrain/core/error.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_settings.h"
#include "unitrain/sweep/asha_schedule.h"

namespace unitrain {
namespace {

bool sets(const Config& raw, const std::string& section, const std::string& key) {
  return raw.has(section) && raw.at(section).has(key);
}

/// True when validation every `every` falls on the end of each length in `rungs`: each is a
/// whole number of periods. Fractions of an epoch count too (`0.5 epochs` falls on the end of
/// 1, 3 and 9 epochs): count / per epochs divides R / P epochs when R * per is a multiple of
/// P * count, and a period in batches then ends on the rung's last batch.
bool validates_at(const TrainUnit& every, const std::vector<TrainUnit>& rungs) {
  return std::all_of(rungs.begin(), rungs.end(), [&](const TrainUnit& r) {
    return every.unit == r.unit && every.count > 0 &&
           (r.count * every.per) % (r.per * every.count) == 0;
  });
}

/// The width trial numbers were zero-padded to in the folder of an earlier sweep: the fewest
/// digits among its trial-<k> folders and configs/trial-<k>.yaml (trial 0's, which has no more
/// than the width); none when it has neither.
std::optional<int> width_in_use(const std::string& folder) {
  namespace fs = std::filesystem;
  std::optional<int> width;
  const auto note = [&](std::string name, const std::string& suffix) {
    if (name.rfind("trial-", 0) != 0 || name.size() <= 6 + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      return;
    }
    name = name.substr(6, name.size() - 6 - suffix.size());
    if (name.find_first_not_of("0123456789") != std::string::npos) return;
    width = std::min(width.value_or(INT32_MAX), static_cast<int>(name.size()));
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    if (e.is_directory(ec)) note(e.path().filename().string(), "");
  }
  for (const auto& e : fs::directory_iterator(fs::path(folder) / "configs", ec)) {
    note(e.path().filename().string(), ".yaml");
  }
  return width;
}

}  // namespace

TrialConfigs::TrialConfigs(const SweepOptions& options, const SearchSpace& space, double cpus)
    : o_(options) {
  if (o_.base.node().IsScalar()) {
    const std::string path = o_.base.node().Scalar();
    try {
      raw_base_ = Config::from_file(path);
    } catch (const ConfigError& e) {  // a relative path is from where the sweep was started
      std::error_code ec;
      throw ConfigError(fmt::format("base: {}{}", e.what(),
                                    std::filesystem::path(path).is_relative()
                                        ? " (a relative base path is from the current folder, " +
                                              std::filesystem::current_path(ec).string() +
                                              ", not the sweep file's)"
                                        : ""));
    }
  } else {
    raw_base_ = Config(YAML::Clone(o_.base.node()), "");
  }
  // The base as a run reads it (its keys declared once, by RunSettings).
  const RunSettings base = RunSettings::from_config(resolve_run_config(raw_base_.clone()));
  // Each trial is `unitrain train` of its config: it needs the training data (a program that
  // brings its own dataset does not, so the run config's schema cannot require it).
  UT_CHECK(base.data.has("train") || space.has("data.train"),
           "base: data.train is not set, and every trial trains on it (unitrain train): give "
           "data.train in the base config");
  UT_CHECK(o_.strategy != SweepStrategy::Asha || !space.has("train.max_length"),
           "space.train.max_length: with strategy asha each trial trains to its rung's length "
           "(asha.min_length up to asha.max_length, promotions resume with a longer one): take "
           "train.max_length out of the space, or use strategy grid or random");
  rungs_ = o_.strategy == SweepStrategy::Asha
               ? asha_rungs(o_.min_length, o_.max_length, o_.reduction_factor)
               : std::vector<TrainUnit>{base.train.max_length};
  // Validation at each rung's end: the metric there is the trial's result.
  if (!space.has("train.val_every") && !validates_at(base.train.val_every, rungs_)) {
    TrainUnit every = rungs_.front();
    for (const TrainUnit& r : rungs_) every.count = std::gcd(every.count, r.count);
    UT_CHECK(validates_at(every, rungs_), "base: train.val_every ", base.train.val_every.str(),
             " does not fall on the end of ", rungs_.back().str(), ", and no period in whole ",
             rungs_.back().str(), " does: give train.max_length in whole epochs, steps or samples");
    settings_.emplace_back("train.val_every", every.str());
  }
  // Several processes at once: each its share of the CPUs. One: train.threads auto, whose
  // threads' place and waits follow the machine's load (2 threads spinning stalled 10x under
  // others' builds: bench/sweep).
  const int64_t processes = o_.parallel * std::max<int64_t>(1, o_.nproc_per_node);
  if (processes > 1 && !space.has("train.threads") && !sets(raw_base_, "train", "threads")) {
    const auto share = std::max<int64_t>(1, static_cast<int64_t>(cpus) / processes);
    settings_.emplace_back("train.threads", std::to_string(share));
  }
  // Trial k's folder is trial-<k> zero-padded to max_trials' width; a continued sweep keeps
  // the width its folders have, whatever max_trials is now (grown from 5 to 20: trial-3 stays
  // trial-3, and trial 12 is trial-12 beside it, not trial-03 and trial-12).
  const int64_t n = std::max<int64_t>(1, o_.max_trials);
  width_ = width_in_use(o_.folder()).value_or(static_cast<int>(std::to_string(n - 1).size()));
}

std::string TrialConfigs::run_dir(int64_t k) const {
  return fmt::format("{}/trial-{:0{}}", o_.folder(), k, width_);
}

Config TrialConfigs::resolve(int64_t k, const TrialParameters& parameters, int rung) const {
  Config raw = raw_base_.clone();
  const std::string dir = run_dir(k);
  raw.set("name", YAML::Dump(YAML::Node(o_.name + "-" + dir.substr(dir.rfind('/') + 1))));
  raw.set("run_dir", YAML::Dump(YAML::Node(dir)));
  for (const auto& [key, value] : settings_) raw.set(key, value);
  raw.set("train.max_length", rungs_[rung].str());
  for (const auto& [key, value] : parameters) {
    try {
      raw.set(key, value);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("space.{}: {}", key, e.what()));
    }
  }
  try {
    return resolve_run_config(raw);
  } catch (const ConfigError& e) {
    std::string values;
    for (const auto& [key, value] : parameters) values += fmt::format(" {}={}", key, value);
    throw ConfigError(fmt::format("space: trial {}'s config ({}) is invalid: {}", k,
                                  values.empty() ? std::string("no parameters") : values.substr(1),
                                  e.what()));
  }
}

}  // namespace unitrain
