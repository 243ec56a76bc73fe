#pragma once
// What every Hugging Face family's model takes (model.args: a folder or a config.json alone)
// and its generation_config.json. Each family's own config.json reader is beside its model
// (gpt2_config.h, llama_config.h; hf_family.h says how they are found).
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain {
template <typename T>
class Options;
}

namespace unitrain::models {

/// `model.args` of gpt2 and llama: where the model's shape (and weights) come from.
struct HfModelOptions {
  std::string pretrained;  ///< a Hugging Face folder: config.json and its weights
  std::string config;      ///< a config.json alone: a fresh model of that shape

  /// Declares `pretrained` and `config` (the model registry's schema of gpt2 and llama).
  static void declare(Options<HfModelOptions>& o);

  /// The config.json to read: `pretrained`/config.json or `config`. ConfigError naming
  /// `key_prefix`pretrained / config when neither or both are given.
  std::string config_path(const std::string& key_prefix) const;
};

/// The text of folder `dir`'s generation_config.json, or `fallback` when it has none.
/// ConfigError naming the file (and the key) for one that is not a JSON object (truncated,
/// damaged) or whose bos_token_id, eos_token_id or pad_token_id is not an id in [0, `vocab`)
/// or a list of them.
std::string read_generation_config(const std::string& dir, int64_t vocab,
                                   const std::string& fallback);

/// generation_config.json for a model with these token ids (Hugging Face's keys).
std::string generation_config_json(const std::vector<int64_t>& bos,
                                   const std::vector<int64_t>& eos);

}  // namespace unitrain::models
