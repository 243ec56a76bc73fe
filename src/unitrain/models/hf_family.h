#pragma once
// HfFamily: what unitrain knows of one Hugging Face model family, by the model_type its
// config.json names: the model type it builds (model.type, the same word), and the names of
// its tensors both ways (a folder's weights -> the model's parameters, and back for `export
// --format hf`). Each family registers one beside its model (gpt2.cpp, llama.cpp: its
// config.json reader and refusals live there too); the commands that take a folder (train's
// model.args.pretrained, generate, export) find it here, with no switch on the type.
#include <string>
#include <vector>

namespace unitrain::models {

struct HfFamily {
  std::string model_type;  ///< config.json's model_type, and the model.type that builds it
  /// The model's name of a tensor that a folder's weights name `file_name` ("h.0.ln_1.weight"
  /// -> "transformer.h.0.ln_1.weight"); "" for a tensor the model does not hold (a causal-mask
  /// buffer, rotary frequencies, the head's copy of tied embeddings: `tied`).
  std::string (*model_name)(const std::string& file_name, bool tied) = nullptr;
  /// The name `export --format hf` writes for the model's parameter `name` (transformers'
  /// name); nullptr: the model's own (its parameters have transformers' names).
  std::string (*file_name)(const std::string& name) = nullptr;
};

/// Registers `family`; ConfigError when its model_type is registered already.
void register_hf_family(HfFamily family);
/// The family of `model_type`, or nullptr.
const HfFamily* find_hf_family(const std::string& model_type);
/// The registered model types, in registration order.
std::vector<std::string> hf_family_types();
/// "gpt2 and llama" (the registered model types, for messages; `conjunction` " or ": "gpt2 or
/// llama").
std::string hf_family_list(const char* conjunction = " and ");

}  // namespace unitrain::models
