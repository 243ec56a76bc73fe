#include "unitrain/commands/export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/checkpoint/trainer_state_file.h"
#include "unitrain/commands/evaluate.h"
#include "unitrain/commands/hf_export.h"
#include "unitrain/commands/model_card.h"
#include "unitrain/commands/open_run.h"
#include "unitrain/commands/peft_adapter.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/engine/setup/run_folder.h"
#include "unitrain/log/console.h"
#include "unitrain/models/lora.h"
#include "unitrain/models/torchscript_export.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

/// Where an export to `out` keeps the class names: beside it, `model.pt` -> `model.classes.json`.
std::string class_names_path(const std::string& out) {
  return fs::path(out).replace_extension(".classes.json").string();
}

/// The input normalisation of the run whose own config is `c`, when it normalised the model's
/// input; statistics its checkpoint `dir` does not hold (written by an earlier unitrain) are
/// computed again from the run's train data.
std::optional<InputNormalization> saved_input_normalization(const ConfigDriven& c,
                                                            const std::string& dir) {
  const NormalizeOptions& norm = c.data_keys.normalize;
  if (!norm.enabled) return std::nullopt;
  const std::string& key = norm.key;
  const std::vector<std::string>& inputs = c.objective_keys.inputs;
  if (inputs.size() != 1 || inputs[0] != key) {
    log::warn(
        fmt::format("the exported model does not apply data.normalize: its key '{}' is not "
                    "the model's one input ({}); normalize '{}' yourself with the mean and "
                    "std in {}/config.yaml",
                    key, fmt::join(inputs, ", "), key, dir));
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

/// A LoRA run's adapters merged into its base weights (W + (alpha / r) B A): every export but
/// PEFT's adapter folder writes the plain model.
void merge_adapters(ObjectiveModule& module, const ConfigDriven& c) {
  if (!c.model_keys.lora) return;
  const size_t n = models::merge_lora_adapters(*module.model());
  log::info(
      fmt::format("model.lora: the adapters of {} layers merged into their weights "
                  "(W + {} B A)",
                  n, c.model_keys.lora->scaling()));
}

/// What README.md says of the folder `out` written from the opened run (before the adapters
/// are merged).
ModelCardFacts card_facts(const OpenedRun& run, const std::string& out) {
  const ConfigDriven& c = run.parts;
  ModelCardFacts f;
  const fs::path folder = fs::path(out).lexically_normal();
  f.name = (folder.has_filename() ? folder : folder.parent_path()).filename().string();
  f.run = c.run.name;
  const HfModelInfo* hf = run.module->model()->hf_info();
  if (hf != nullptr && !hf->pretrained.empty()) {
    f.base = fs::absolute(hf->pretrained).lexically_normal().string();
  }
  if (c.model_keys.lora) {
    const LoraOptions& lora = *c.model_keys.lora;
    f.lora = &lora;
    f.targets = lora.target_pattern.empty() ? lora.target_modules
                                            : std::vector<std::string>{lora.target_pattern};
    f.adapted_layers = models::lora_layers(run.module->weights()).size();
    f.saved_modules = models::lora_modules_to_save(run.module->weights(), lora);
  }
  f.trained = TrainerStateFile::read(run.dir).state;
  return f;
}

/// --format hf: a Hugging Face folder, or PEFT's adapter folder for a LoRA run without `merge`.
void export_hf(OpenedRun& run, const std::string& out, uint64_t max_shard_bytes, bool merge) {
  const HfModelInfo* hf = run.module->model()->hf_info();
  ModelCardFacts card = card_facts(run, out);
  if (run.parts.model_keys.lora && !merge && hf != nullptr) {
    card.adapter = true;
    write_peft_folder(*run.module, *run.parts.model_keys.lora, hf->pretrained, out, run.config,
                      model_card(card));
    return;
  }
  merge_adapters(*run.module, run.parts);
  write_hf_folder(*run.module, run.config, out, max_shard_bytes, model_card(card));
}

/// `out` checked before the model is built and read, and named as the user wrote it (a failed
/// write would name the temporary file).
void check_export_file(const std::string& out) {
  UT_CHECK(!out.empty(), "--out: give the file to write");
  const fs::path folder = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : ".";
  std::error_code ec;
  UT_CHECK(fs::is_directory(folder, ec), "--out ", out, ": the folder ", folder.string(),
           fs::exists(folder, ec) ? " is not a folder" : " does not exist (create it first)");
  UT_CHECK(!fs::is_directory(out, ec), "--out ", out, " is a folder: give the file to write (e.g. ",
           (fs::path(out) / "model.pt").string(), ")");
}

/// The merged model's tensors as a state dict or safetensors file.
void export_tensors(const OpenedRun& run, const std::string& format, const std::string& out,
                    const std::vector<std::string>& classes) {
  const NamedTensors state = module_state(run.module->weights(), true);
  if (format == "safetensors") {
    std::map<std::string, std::string> metadata{{"format", "pt"}};
    if (!classes.empty()) metadata["classes"] = nlohmann::json(classes).dump();
    write_safetensors(out, state, metadata);
  } else {
    const std::vector<char> bytes = save_tensor_dict(state);
    write_file_atomic(out, std::string(bytes.begin(), bytes.end()));
  }
  if (saved_input_normalization(run.parts, run.dir)) {
    log::info(
        fmt::format("the model was trained on inputs normalized by data.normalize; a {} "
                    "file holds only its tensors: normalize inputs with the mean and std "
                    "in {}/config.yaml (or export --format torchscript, which does)",
                    format, run.dir));
  }
}

}  // namespace

std::string export_checkpoint(const Config& given, const std::string& checkpoint,
                              const std::string& format, const std::string& out,
                              const std::string& weights, uint64_t max_shard_bytes, bool merge) {
  ChosenCheckpoint chosen = choose_checkpoint(given, checkpoint, "export");
  const bool lora = chosen.parts.model_keys.lora.has_value();
  UT_CHECK(format == "state_dict" || format == "safetensors" || format == "torchscript" ||
               format == "hf",
           "--format ", format, ": give state_dict, safetensors, torchscript or hf");
  UT_CHECK(!merge || (format == "hf" && lora), "--merge: ",
           format != "hf" ? "only --format hf writes a LoRA run's adapters apart (the other "
                            "formats merge them always)"
                          : "the run has no LoRA adapters (model.lora)");
  if (format == "hf") {
    check_hf_export_folder(out);
    OpenedRun run = open_run(std::move(chosen), weights);
    export_hf(run, out, max_shard_bytes, merge);
    return run.dir;
  }
  check_export_file(out);
  OpenedRun run = open_run(std::move(chosen), weights);
  merge_adapters(*run.module, run.parts);
  run.module->eval();
  const std::vector<std::string> classes = checkpoint_class_names(run.dir);
  if (format == "torchscript") {
    UT_CHECK(can_export_torchscript(*run.module->model()),
             no_torchscript_text(*run.module->model(),
                                 "model.type " + component_type(run.config.at("model"))));
    const std::optional<InputNormalization> norm = saved_input_normalization(run.parts, run.dir);
    save_torchscript(*run.module->model(), out, norm ? &*norm : nullptr);
    if (norm) {
      log::info(
          fmt::format("the exported model normalizes its input with data.normalize's "
                      "statistics ({} channels): give it raw inputs",
                      norm->mean.size()));
    }
  } else {
    export_tensors(run, format, out, classes);
  }
  if (!classes.empty()) {  // once the model is written
    const std::string beside = class_names_path(out);
    write_file_atomic(beside, class_names_json(classes));
    log::info(fmt::format("the class names ({}) are in {}", classes.size(), beside));
  }
  return run.dir;
}

}  // namespace unitrain
