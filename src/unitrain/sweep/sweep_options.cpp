#include "unitrain/sweep/sweep_options.h"

#include <yaml-cpp/yaml.h>

#include "unitrain/core/error.h"
#include "unitrain/engine/config/run_settings.h"

namespace unitrain {

namespace {

/// What the keys cannot say alone (ConfigError naming the key): `base` a path or a map, `metric`
/// a validation metric, and asha's lengths in one unit, whole counts, min <= max.
void check_sweep_options(SweepOptions& t, const Config& c) {
  check_folder_name(c.key_path("name"), t.name, "sweeps", "sweep_dir");
  UT_CHECK(t.base.node().IsMap() || t.base.node().IsScalar(), c.key_path("base"),
           ": expected a run config file's path or a map");
  UT_CHECK(t.metric.rfind("val/", 0) == 0, c.key_path("metric"), ": '", t.metric,
           "' is not a validation metric: trials are ranked by what their validation "
           "reports, e.g. val/loss or val/<metric name>");
  if (t.strategy != SweepStrategy::Asha) return;
  UT_CHECK(t.min_length.unit == t.max_length.unit && !t.min_length.fractional() &&
               !t.max_length.fractional(),
           c.key_path("asha.max_length"),
           ": min_length and max_length take the same unit in whole counts, got ",
           t.min_length.str(), " and ", t.max_length.str());
  UT_CHECK(t.min_length.count <= t.max_length.count, c.key_path("asha.max_length"), ": ",
           t.max_length.str(), " is shorter than asha.min_length ", t.min_length.str());
}

}  // namespace

void SweepOptions::declare(Options<SweepOptions>& o) {
  using T = SweepOptions;
  o.field("name", &T::name)
      .required()
      .help("the sweep's name, one folder name (no '/'); its folder is sweeps/<name>");
  o.key("base", Type::Any, &T::base)
      .required()
      .help(
          "the run config every trial starts from: a YAML file's path (from the current folder) "
          "or the config itself as a map");
  o.key("space", Type::Any, &T::space)
      .required()
      .help(
          "config key path -> distribution: {choice: [..]}, {uniform: [lo, hi]}, {loguniform: "
          "[lo, hi]}, {int: [lo, hi]} or {grid: [..]}");
  o.field("metric", &T::metric)
      .required()
      .help("the validation metric trials are ranked by, as metrics.jsonl names it (val/acc)");
  o.field("mode", &T::higher_is_better, {{"min", false}, {"max", true}})
      .help("min: lower metric is better; max: higher is better");
  o.field("strategy", &T::strategy,
          {{"grid", SweepStrategy::Grid},
           {"random", SweepStrategy::Random},
           {"asha", SweepStrategy::Asha}})
      .help(
          "grid: every point of the grid keys; random: max_trials draws; asha: max_trials draws "
          "trained in rungs, the best 1/reduction_factor of each rung promoted by resuming them");
  o.field("max_trials", &T::max_trials)
      .min(0)
      .help(
          "trials to run; 0 = the grid's size (grid keys' product), which random and asha "
          "cannot use");
  o.field("seed", &T::seed).help("seeds the draws: trial k's parameters depend on (seed, k) only");
  o.field("parallel", &T::parallel)
      .min(1)
      .help(
          "trials at once; with more than one (or multi-process trials) each trial's "
          "train.threads is the machine's CPUs / its processes at once (at least 1), with one "
          "train.threads auto, unless the base config or the space sets it");
  o.field("retries", &T::retries)
      .min(0)
      .help("restarts (from its checkpoint) of a trial ended by a signal the sweep did not send");
  o.field("sweep_dir", &T::sweep_dir).help("the sweep's folder; null = sweeps/<name>");
  declare_trial_sections(o);
  o.check(check_sweep_options);
}

void SweepOptions::declare_trial_sections(Options<SweepOptions>& o) {
  using T = SweepOptions;
  Options<T>& launch = o.group("launch", "multi-process trials, started by unitrain launch");
  launch.field("nproc_per_node", &T::nproc_per_node)
      .min(0)
      .help("processes of each trial (unitrain launch --nproc-per-node); 0 = one unitrain train");
  launch.field("master_port", &T::master_port)
      .min(1)
      .help("trial k's rendezvous port is master_port + k");
  Options<T>& asha = o.group("asha", "the rungs of strategy asha");
  asha.field("min_length", &T::min_length)
      .help("the first rung's length, in the run's units (1 epoch, 300 steps)");
  asha.field("max_length", &T::max_length)
      .help("the last rung's length: rungs are min_length * reduction_factor^i up to it");
  asha.field("reduction_factor", &T::reduction_factor)
      .min(2)
      .help("r: the best 1/r of a rung's trials go on to the next rung, r times longer");
}

SweepOptions load_sweep_options(const std::string& file,
                                const std::vector<std::pair<std::string, std::string>>& overrides) {
  Config raw = Config::from_file(file);
  // A run's config where a sweep file belongs: said as such, not as its first unknown key.
  const YAML::Node& root = raw.node();
  UT_CHECK(root["base"].IsDefined() || !(root["model"].IsDefined() || root["data"].IsDefined() ||
                                         root["train"].IsDefined()),
           file,
           " is a run's config (it has model:, data: or train:), not a sweep file: train it "
           "with `unitrain train ",
           file,
           "`, or sweep it from a file that names it in base: "
           "(docs/sweeps.md)");
  for (const auto& [key, value] : overrides) {
    // A space key is a run config key path, dots and all: `--space.optimizer.lr '{choice:
    // [0.1, 0.01]}'` sets (or adds) that key's distribution, as the file's space map does.
    if (key.rfind("space.", 0) == 0 && key.size() > 6 && raw.node()["space"].IsMap()) {
      YAML::Node distribution;
      try {
        distribution = YAML::Load(value);
      } catch (const YAML::Exception& e) {
        throw ConfigError("--" + key + ": not YAML: " + e.what());
      }
      UT_CHECK(distribution.IsMap(), "--", key,
               ": expected a distribution, e.g. '{choice: [0.1, "
               "0.01]}' or '{loguniform: [1.0e-4, 1.0e-2]}', got '",
               value, "'");
      raw.node()["space"][key.substr(6)] = distribution;
      continue;
    }
    // `base` given as a file: a key inside it is not a key of the sweep's file.
    UT_CHECK(key.rfind("base.", 0) != 0 || !raw.node()["base"].IsScalar(), "--", key,
             ": base is the file ", raw.node()["base"].as<std::string>(""), ", not a map: set ",
             key.substr(5),
             " in that file, or give every trial the value "
             "through the space: --space.",
             key.substr(5), " '{choice: [", value, "]}'");
    raw.set(key, value);
  }
  return options_of<SweepOptions>().parse(raw);
}

}  // namespace unitrain
