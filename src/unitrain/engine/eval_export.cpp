// unitrain eval and export: a trained run's checkpoint, its model and inputs built as the run
// built them (its own config.yaml), evaluated on a split or written in a format others read.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "unitrain/checkpoint/checkpoint_files.h"
#include "unitrain/checkpoint/checkpoint_store.h"
#include "unitrain/checkpoint/checkpointer.h"
#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/data/loader.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/resume_config.h"
#include "unitrain/engine/config_driven.h"
#include "unitrain/engine/hf_export.h"
#include "unitrain/engine/model_card.h"
#include "unitrain/engine/peft_adapter.h"
#include "unitrain/engine/setup/run_device.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/engine/train_from_config.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/log/console.h"
#include "unitrain/models/lora.h"
#include "unitrain/models/torchscript_export.h"

namespace unitrain {
namespace {

/// A checkpoint of the run (`best`, `last` or a folder), verified; ConfigError naming it when
/// there is none or it is damaged.
std::string find_checkpoint(const RunSettings& run, const std::string& choice) {
  UT_CHECK(choice != "auto" && choice != "none" && !choice.empty(),
           "--checkpoint ", choice, ": give best, last or a checkpoint folder");
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

/// The config the run's checkpoint `choice` trained with (its config.yaml), but for what
/// evaluating or exporting it may choose itself: the test data, the loader, the metrics, the
/// device, threads and logging (as `given` says them). So eval and export build the model and
/// read its inputs as the run did, whatever YAML names the run; each key of the given config
/// that shapes them and differs is said, and the run's value used.
Config runs_own_config(const Config& given, const std::string& choice, const char* command) {
  const std::string dir = find_checkpoint(config_driven(given).run, choice);
  Config own = read_checkpoint_config(dir);
  static const char* const kChosen[][2] = {
      {"data", "test"},  {"data", "loader"}, {"objective", "metrics"}, {"train", "device"},
      {"train", "threads"}, {"log", nullptr}, {"name", nullptr},        {"run_dir", nullptr}};
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
    log::warn(fmt::format("{}: {} is {} in the run ({}/config.yaml), {} in the config given: the "
                          "run's own is used",
                          command, d.key, d.was, dir, d.now));
  }
  return resolve_run_config(own);  // an earlier unitrain's file: today's defaults filled in
}

/// Loads the model tensors of checkpoint `dir` into `module` (strict: the config's model must
/// be the checkpoint's). Returns the checkpoint's optimizer step.
int64_t load_checkpoint_model(ObjectiveModule& module, const std::string& dir) {
  const std::string what = "checkpoint " + dir + "/" + checkpoint_files::kModel;
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
    state = with_frozen_parameters(module.weights(), std::move(state));
  }
  log::info(load_module_state(module.weights(), state, true, what));
  return step;
}

/// find_checkpoint then load_checkpoint_model. A run training in the same folder meanwhile
/// (read-only commands need no lock) may prune the checkpoint between the two (keep_last, or
/// `last` moving on): then the newest one the choice names is found and read again.
std::pair<std::string, int64_t> load_chosen_checkpoint(const RunSettings& run,
                                                       const std::string& choice,
                                                       ObjectiveModule& module) {
  for (int attempt = 1;; ++attempt) {
    const std::string dir = find_checkpoint(run, choice);
    try {
      return {dir, load_checkpoint_model(module, dir)};
    } catch (const ConfigError&) {
      std::error_code ec;
      if (attempt == 3 || std::filesystem::exists(dir, ec)) throw;
      log::info(fmt::format("checkpoint {} was removed while it was read (a run is training "
                            "there); reading the current one", dir));
    }
  }
}

/// The class names checkpoint `dir` holds (classes.json), or none (a run whose data has none,
/// or a checkpoint from before they were kept).
std::vector<std::string> checkpoint_class_names(const std::string& dir) {
  if (!CheckpointStore::has(dir, checkpoint_files::kClasses)) return {};
  const std::vector<char> bytes = CheckpointStore::read(dir, checkpoint_files::kClasses);
  return parse_class_names(std::string(bytes.begin(), bytes.end()),
                           dir + "/" + checkpoint_files::kClasses);
}

/// Where an export to `out` keeps the class names: beside it, `model.pt` -> `model.classes.json`.
std::string class_names_path(const std::string& out) {
  return std::filesystem::path(out).replace_extension(".classes.json").string();
}

/// `weights` (validated | trained) of checkpoint `dir` into `module`, whose model.pt is loaded:
/// validated = what validation used (a callback's own weights, e.g. ema's average).
void choose_weights(Trainer& trainer, ObjectiveModule& module, const std::string& dir,
                    const std::string& weights) {
  if (weights == "trained") return;
  const std::string by = trainer.load_validated_weights(module, dir);
  if (by.empty()) return;
  log::info(fmt::format("weights: the {} callback's, as validation used them (--weights trained "
                        "for the weights as trained)", by));
}

void check_weights_choice(const std::string& weights) {
  UT_CHECK(weights == "validated" || weights == "trained", "--weights ", weights,
           ": give validated (what validation used, e.g. the ema average) or trained");
}

/// The input normalisation of the run whose own config (runs_own_config) is `config`, when
/// it normalised the model's input; statistics its checkpoint `dir` does not hold (written by an
/// earlier unitrain) are computed again from the run's train data.
std::optional<InputNormalization> saved_input_normalization(const Config& config,
                                                            const std::string& dir) {
  const ConfigDriven c = config_driven(config);
  const NormalizeOptions& norm = c.data_keys.normalize;
  if (!norm.enabled) return std::nullopt;
  const std::string& key = norm.key;
  const std::vector<std::string>& inputs = c.objective_keys.inputs;
  if (inputs.size() != 1 || inputs[0] != key) {
    log::warn(fmt::format("the exported model does not apply data.normalize: its key '{}' is not "
                          "the model's one input ({}); normalize '{}' yourself with the mean and "
                          "std in {}/config.yaml", key, fmt::join(inputs, ", "), key, dir));
    return std::nullopt;
  }
  InputNormalization n{norm.mean, norm.stddev};
  if (n.mean.empty() || n.std.empty()) {
    const DataSplits data = build_data(c.run.data, c.run.seed);
    if (n.mean.empty()) n.mean = data.normalize_mean;
    if (n.std.empty()) n.std = data.normalize_std;
  }
  return n;
}

}  // namespace

EvalResult evaluate_checkpoint(const Config& given, const std::string& checkpoint,
                               const std::string& split, const std::string& weights) {
  const Config config = runs_own_config(given, checkpoint, "eval");
  const ConfigDriven c = config_driven(config);
  UT_CHECK(split == "val" || split == "test", "--split ", split, ": give val or test");
  check_weights_choice(weights);
  Trainer trainer(config);
  // A bad --checkpoint is said before data is read; the val split is the one it trained with.
  const ShuffleAlgorithm split_by =
      TrainerStateFile::read(find_checkpoint(c.run, checkpoint)).data_order;
  DataSplits data = build_data(c.run.data, c.run.seed, split_by);
  DatasetPtr dataset = split == "val" ? data.val : data.test;
  UT_CHECK(dataset != nullptr, "--split ", split, ": the config has no ", split, " data (set ",
           split == "val" ? "data.val or data.validation_ratio" : "data.test", ")");
  auto module = build_module(c, false);
  EvalResult result;
  result.split = split;
  std::tie(result.checkpoint, result.step) = load_chosen_checkpoint(c.run, checkpoint, *module);
  const std::string& dir = result.checkpoint;
  choose_weights(trainer, *module, dir, weights);
  // Evaluated on the run's device (train.device), the checkpoint's CPU tensors moved there.
  module->to(resolve_device(c.run.train.device, 0));
  result.metrics = trainer.evaluate(*module, dataset,
                                    split == "val" ? EvalSplit::Val : EvalSplit::Test, split);

  nlohmann::json out;
  out["split"] = split;
  out["checkpoint"] = std::filesystem::absolute(dir).lexically_normal().string();
  out["step"] = result.step;
  out["examples"] = dataset->size();
  for (const auto& [k, v] : result.metrics) out["metrics"][k] = v;
  const Loader loader(dataset, c.run.loader.in_order(), 0, "data." + split);
  result.classes = class_results(*module, loader, checkpoint_class_names(dir));
  if (result.classes) out.update(nlohmann::json::parse(result.classes->json()));
  const std::string results_dir = c.run.run_dir + "/results";
  prepare_writable_dir(results_dir);
  result.results_file = results_dir + "/" + split + ".json";
  write_file_atomic(result.results_file, out.dump(1) + "\n");
  return result;
}

LoadedCheckpoint load_checkpoint_module(const Config& given, const std::string& checkpoint,
                                        const std::string& weights, const char* command) {
  const Config config = runs_own_config(given, checkpoint, command);
  const ConfigDriven c = config_driven(config);
  check_weights_choice(weights);
  Trainer trainer(config);
  LoadedCheckpoint out{config, build_module(c, false), ""};
  out.dir = load_chosen_checkpoint(c.run, checkpoint, *out.module).first;
  choose_weights(trainer, *out.module, out.dir, weights);
  return out;
}

namespace {

/// A LoRA run's adapters merged into its base weights (W + (alpha / r) B A): every export but
/// PEFT's adapter folder writes the plain model.
void merge_adapters(ObjectiveModule& module, const ConfigDriven& c) {
  if (!c.model_keys.lora) return;
  const size_t n = models::merge_lora_adapters(*module.model());
  log::info(fmt::format("model.lora: the adapters of {} layers merged into their weights "
                        "(W + {} B A)", n, c.model_keys.lora->scaling()));
}

/// What README.md says of the folder `out` written from checkpoint `checkpoint_dir` of run `c`
/// (before the adapters are merged).
ModelCardFacts card_facts(const ConfigDriven& c, ObjectiveModule& module, const std::string& out,
                          const std::string& checkpoint_dir) {
  namespace fs = std::filesystem;
  ModelCardFacts f;
  const fs::path folder = fs::path(out).lexically_normal();
  f.name = (folder.has_filename() ? folder : folder.parent_path()).filename().string();
  f.run = c.run.name;
  const HfModelInfo* hf = module.model()->hf_info();
  if (hf != nullptr && !hf->pretrained.empty()) {
    f.base = fs::absolute(hf->pretrained).lexically_normal().string();
  }
  if (c.model_keys.lora) {
    const LoraOptions& lora = *c.model_keys.lora;
    f.lora = &lora;
    f.targets = lora.target_pattern.empty() ? lora.target_modules
                                            : std::vector<std::string>{lora.target_pattern};
    f.adapted_layers = models::lora_layers(module.weights()).size();
    f.saved_modules = models::lora_modules_to_save(module.weights(), lora);
  }
  f.trained = TrainerStateFile::read(checkpoint_dir).state;
  return f;
}

}  // namespace

std::string export_checkpoint(const Config& given, const std::string& checkpoint,
                              const std::string& format, const std::string& out,
                              const std::string& weights, uint64_t max_shard_bytes, bool merge) {
  const Config config = runs_own_config(given, checkpoint, "export");
  const ConfigDriven c = config_driven(config);
  check_weights_choice(weights);
  UT_CHECK(format == "state_dict" || format == "safetensors" || format == "torchscript" ||
               format == "hf",
           "--format ", format, ": give state_dict, safetensors, torchscript or hf");
  UT_CHECK(!merge || (format == "hf" && c.model_keys.lora), "--merge: ",
           format != "hf" ? "only --format hf writes a LoRA run's adapters apart (the other "
                            "formats merge them always)"
                          : "the run has no LoRA adapters (model.lora)");
  if (format == "hf") {
    check_hf_export_folder(out);
    Trainer trainer(config);
    auto module = build_module(c, false);
    const std::string dir = load_chosen_checkpoint(c.run, checkpoint, *module).first;
    choose_weights(trainer, *module, dir, weights);
    const HfModelInfo* hf = module->model()->hf_info();
    ModelCardFacts card = card_facts(c, *module, out, dir);
    if (c.model_keys.lora && !merge && hf != nullptr) {
      card.adapter = true;
      write_peft_folder(*module, *c.model_keys.lora, hf->pretrained, out, config, model_card(card));
      return dir;
    }
    merge_adapters(*module, c);
    write_hf_folder(*module, config, out, max_shard_bytes, model_card(card));
    return dir;
  }
  UT_CHECK(!out.empty(), "--out: give the file to write");
  // Checked before the model is built and read, and named as the user wrote it (a failed write
  // would name the temporary file).
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : ".";
  std::error_code ec;
  UT_CHECK(fs::is_directory(folder, ec), "--out ", out, ": the folder ", folder.string(),
           fs::exists(folder, ec) ? " is not a folder" : " does not exist (create it first)");
  UT_CHECK(!fs::is_directory(out, ec), "--out ", out, " is a folder: give the file to write (e.g. ",
           (fs::path(out) / "model.pt").string(), ")");
  Trainer trainer(config);
  auto module = build_module(c, false);
  const std::string dir = load_chosen_checkpoint(c.run, checkpoint, *module).first;
  choose_weights(trainer, *module, dir, weights);
  merge_adapters(*module, c);
  module->eval();
  const std::vector<std::string> classes = checkpoint_class_names(dir);
  if (format == "torchscript") {
    const std::optional<InputNormalization> norm = saved_input_normalization(config, dir);
    save_torchscript(*module->model(), out, norm ? &*norm : nullptr);
    if (norm) {
      log::info(fmt::format("the exported model normalizes its input with data.normalize's "
                            "statistics ({} channels): give it raw inputs", norm->mean.size()));
    }
  } else {
    const NamedTensors state = module_state(module->weights(), true);
    if (format == "safetensors") {
      std::map<std::string, std::string> metadata{{"format", "pt"}};
      if (!classes.empty()) metadata["classes"] = nlohmann::json(classes).dump();
      write_safetensors(out, state, metadata);
    } else {
      const std::vector<char> bytes = save_tensor_dict(state);
      write_file_atomic(out, std::string(bytes.begin(), bytes.end()));
    }
    if (saved_input_normalization(config, dir)) {
      log::info(
          fmt::format("the model was trained on inputs normalized by data.normalize; a {} "
                      "file holds only its tensors: normalize inputs with the mean and std "
                      "in {}/config.yaml (or export --format torchscript, which does)",
                      format, dir));
    }
  }
  if (!classes.empty()) {  // once the model is written
    const std::string beside = class_names_path(out);
    write_file_atomic(beside, class_names_json(classes));
    log::info(fmt::format("the class names ({}) are in {}", classes.size(), beside));
  }
  return dir;
}

}  // namespace unitrain
