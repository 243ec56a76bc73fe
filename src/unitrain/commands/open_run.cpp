#include "unitrain/commands/open_run.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <tuple>
#include <utility>
#include <vector>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/console.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

/// The folder a run was started in, from where its folder is (`folder`) and its run_dir as
/// config.yaml says it: `folder` without run_dir's trailing parts; "" when run_dir is absolute
/// or is not how `folder` ends.
fs::path start_folder(const fs::path& folder, const std::string& run_dir) {
  const fs::path rel = fs::path(run_dir).lexically_normal();
  if (run_dir.empty() || rel.is_absolute()) return {};
  fs::path at = fs::absolute(folder).lexically_normal();
  if (!at.has_filename()) at = at.parent_path();  // "runs/x/" ends with an empty part
  std::vector<fs::path> parts(rel.begin(), rel.end());
  while (!parts.empty() && parts.back().empty()) parts.pop_back();
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (at.filename() != *it) return {};
    at = at.parent_path();
  }
  return at;
}

/// A checkpoint of the run (`best`, `last` or a folder), verified; ConfigError naming it when
/// there is none or it is damaged.
std::string find_checkpoint(const RunSettings& run, const std::string& choice) {
  UT_CHECK(choice != "auto" && choice != "none" && !choice.empty(), "--checkpoint ", choice,
           ": give best, last or a checkpoint folder");
  const std::string root = run.run_dir + "/checkpoints";
  std::string dir;
  try {
    dir = Checkpointer(run.checkpoint, root).find_resume(choice);
  } catch (const ConfigError& e) {  // find_resume speaks of checkpoint.resume
    std::string m = e.what();
    if (const std::string key = "checkpoint.resume: "; m.rfind(key, 0) == 0) m.erase(0, key.size());
    throw ConfigError("--checkpoint: " + m);
  }
  UT_CHECK(!dir.empty(), "--checkpoint ", choice, ": no checkpoint in ", root);
  return dir;
}

/// The config checkpoint `dir` trained with, but for what the command may choose itself
/// (ChosenCheckpoint::config).
Config runs_own_config(const Config& given, const std::string& dir, const char* command) {
  Config own = read_checkpoint_config(dir);
  static const char* const kChosen[][2] = {
      {"data", "test"},     {"data", "loader"}, {"objective", "metrics"}, {"train", "device"},
      {"train", "threads"}, {"log", nullptr},   {"name", nullptr},        {"run_dir", nullptr}};
  for (const auto& key : kChosen) {
    const YAML::Node from = given.node()[key[0]];
    if (!from.IsDefined() || from.IsNull()) continue;
    if (key[1] == nullptr) {
      own.node()[key[0]] = YAML::Clone(from);
    } else if (from.IsMap() && from[key[1]].IsDefined()) {
      own.node()[key[0]][key[1]] = YAML::Clone(from[key[1]]);
    }
  }
  auto shapes = [](const std::string& k) {
    auto under = [&k](const char* p) { return k == p || k.rfind(std::string(p) + ".", 0) == 0; };
    return (under("model") || under("data") || under("objective") || under("callbacks") ||
            under("seed") || under("precision")) &&
           !under("data.test") && !under("data.loader") && !under("objective.metrics");
  };
  for (const ConfigChange& d : config_differences(own, given)) {
    if (!shapes(d.key)) continue;
    // Statistics the run computed from its data are absent from a YAML that asks for them.
    if ((d.key == "data.normalize.mean" || d.key == "data.normalize.std") &&
        (d.now == "[]" || d.now == "(unset)")) {
      continue;
    }
    log::warn(
        fmt::format("{}: {} is {} in the run ({}/config.yaml), {} in the config given: the "
                    "run's own is used",
                    command, d.key, d.was, dir, d.now));
  }
  return resolve_run_config(own);  // an earlier unitrain's file: today's defaults filled in
}

/// Loads the model tensors of checkpoint `dir` into `module` (strict: the config's model must
/// be the checkpoint's). Returns the checkpoint's optimizer step.
int64_t load_checkpoint_model(ObjectiveModule& module, const std::string& dir) {
  // distributed.zero: 3's checkpoints hold each rank's parts, merged here.
  const std::string what = CheckpointStore::has(dir, checkpoint_files::kModelShards)
                               ? "checkpoint " + dir + " (" + checkpoint_files::model_shard(0) +
                                     ", ...: the ranks' parts)"
                               : "checkpoint " + dir + "/" + checkpoint_files::kModel;
  NamedTensors state;
  int64_t step = 0;
  try {
    state = read_model_state(dir);  // whole, or distributed.zero: 3's parts merged
    step = TrainerStateFile::read(dir).state.step;
  } catch (const TrainError& e) {
    throw ConfigError(e.what());
  }
  if (module.checkpoints_trainable_only()) {  // LoRA: the adapters, over the base read again
    if (CheckpointStore::has(dir, checkpoint_files::kFrozenWeights)) {
      const std::vector<char> saved = CheckpointStore::read(dir, checkpoint_files::kFrozenWeights);
      check_frozen_fingerprint({saved.begin(), saved.end()}, frozen_fingerprint(module.weights()),
                               dir + "/" + checkpoint_files::kFrozenWeights);
    }
    const size_t trained = state.size();
    state = with_frozen_parameters(module.weights(), std::move(state));
    load_module_state(module.weights(), state, true, what);
    log::info(fmt::format(
        "loaded {} trained tensors from {}; the frozen base's {} as the model built them", trained,
        what, state.size() - trained));
    return step;
  }
  log::info(load_module_state(module.weights(), state, true, what));
  return step;
}

/// load_checkpoint_model of `dir`, verified when it was chosen. A run training in the same
/// folder meanwhile (read-only commands need no lock) may prune it before it is read (keep_last,
/// or `last` moving on): then the newest one `choice` names is found and read instead. Returns
/// the folder read and its step.
std::pair<std::string, int64_t> load_chosen_checkpoint(const RunSettings& run, std::string dir,
                                                       const std::string& choice,
                                                       ObjectiveModule& module) {
  for (int attempt = 1;; ++attempt) {
    try {
      return {dir, load_checkpoint_model(module, dir)};
    } catch (const ConfigError&) {
      std::error_code ec;
      if (attempt == 3 || fs::exists(dir, ec)) throw;
      log::info(
          fmt::format("checkpoint {} was removed while it was read (a run is training "
                      "there); reading the current one",
                      dir));
      dir = find_checkpoint(run, choice);
    }
  }
}

}  // namespace

RunSource read_run_source(const std::string& file, Overrides overrides) {
  std::error_code error;
  if (!fs::is_directory(file, error)) return {load_run_config({file}, overrides), ""};
  // A run folder: the config it trained with (config.yaml, every override it was given
  // included), in the folder given wherever it was started from.
  const fs::path saved = fs::path(file) / "config.yaml";
  UT_CHECK(fs::is_regular_file(saved, error), file,
           " is a folder without a config.yaml: give the run's YAML file, or a run folder "
           "(its run_dir)");
  overrides.insert(overrides.begin(), {"run_dir", option_detail::yaml_text(file)});
  RunSource source{load_run_config({saved.string()}, overrides), ""};
  const fs::path started =
      start_folder(file, Config::from_file(saved.string()).get_string("run_dir"));
  if (!started.empty() && fs::current_path(error) != started) {
    source.started_elsewhere = " (" + file + " was started in " + started.string() +
                               ": its config's relative paths are read from there; run the "
                               "command from that folder)";
  }
  return source;
}

ChosenCheckpoint::ChosenCheckpoint() = default;
ChosenCheckpoint::ChosenCheckpoint(ChosenCheckpoint&&) noexcept = default;
ChosenCheckpoint& ChosenCheckpoint::operator=(ChosenCheckpoint&&) noexcept = default;
ChosenCheckpoint::~ChosenCheckpoint() = default;

ChosenCheckpoint choose_checkpoint(const Config& given, const std::string& choice,
                                   const char* command) {
  ChosenCheckpoint c;
  c.choice = choice;
  c.command = command;
  c.dir = find_checkpoint(config_driven(given).run, choice);
  c.config = runs_own_config(given, c.dir, command);
  c.parts = config_driven(c.config);
  c.trainer = std::make_unique<Trainer>(c.config);
  return c;
}

OpenedRun open_run(ChosenCheckpoint chosen, const std::string& weights) {
  UT_CHECK(weights == "validated" || weights == "trained", "--weights ", weights,
           ": give validated (what validation used, e.g. the ema average) or trained");
  OpenedRun run;
  static_cast<ChosenCheckpoint&>(run) = std::move(chosen);
  run.module = build_module(run.parts, false);
  std::tie(run.dir, run.step) =
      load_chosen_checkpoint(run.parts.run, run.dir, run.choice, *run.module);
  if (weights == "validated") {
    const std::string by = run.trainer->load_validated_weights(*run.module, run.dir);
    if (!by.empty()) {
      log::info(
          fmt::format("weights: the {} callback's, as validation used them (--weights "
                      "trained for the weights as trained)",
                      by));
    }
  }
  return run;
}

OpenedRun open_run(const Config& given, const std::string& choice, const std::string& weights,
                   const char* command) {
  return open_run(choose_checkpoint(given, choice, command), weights);
}

}  // namespace unitrain
