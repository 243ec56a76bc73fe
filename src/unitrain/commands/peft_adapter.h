#pragma once
// LoRA adapters in PEFT's folder layout: adapter_config.json and adapter_model.safetensors, the
// tensors named base_model.model.<layer>.lora_A.weight / lora_B.weight (PeftModel's names).
#include <string>

namespace unitrain {

class Config;
class ObjectiveModule;
struct LoraOptions;

/// Whether `path` is a folder holding adapter_config.json.
bool is_peft_adapter_folder(const std::string& path);

/// Loads the adapters of PEFT folder `dir` (named by `key` in errors) into `module`'s, which
/// model.lora `lora` made: ConfigError unless its peft_type is LORA, its r, lora_alpha,
/// use_rslora, target_modules and modules_to_save are `lora`'s, and it holds exactly the
/// model's adapters and the parameters of its modules_to_save (names and shapes).
void load_peft_adapter(ObjectiveModule& module, const LoraOptions& lora, const std::string& dir,
                       const std::string& key);

/// Writes `module`'s adapters (made by model.lora `lora`, on the base model of folder `base`)
/// as PEFT's folder `out` (new; written beside it and renamed): adapter_config.json with the
/// fields PEFT writes (peft_type LORA, task_type CAUSAL_LM, r, lora_alpha, lora_dropout,
/// target_modules, modules_to_save, fan_in_fan_out, bias none, use_rslora,
/// base_model_name_or_path, ...), adapter_model.safetensors (the adapters, and the parameters
/// of modules_to_save as base_model.model.<module>.<parameter>, PEFT's names), the tokenizer
/// files (copy_tokenizer_files of the run whose config is `config`) and README.md with the
/// text `model_card` (none when ""). ConfigError when the model has no adapters.
void write_peft_folder(ObjectiveModule& module, const LoraOptions& lora, const std::string& base,
                       const std::string& out, const Config& config,
                       const std::string& model_card = "");

}  // namespace unitrain
