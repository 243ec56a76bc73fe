#pragma once
// The config.json of a Hugging Face model folder (GPT-2's and Llama's), read into the shapes
// and constants unitrain's gpt2 and llama compute with. A key that changes the math in a way
// they do not compute is refused by name; a key they do not know is named in a warning.
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

/// GPT-2's config.json (GPT2Config's keys and defaults).
struct Gpt2Config {
  int64_t vocab_size = 50257, n_positions = 1024, n_embd = 768, n_layer = 12, n_head = 12;
  int64_t n_inner = 0;  ///< 0 (null) = 4 * n_embd
  std::string activation_function = "gelu_new";
  double resid_pdrop = 0.1, embd_pdrop = 0.1, attn_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5, initializer_range = 0.02;
  bool tie_word_embeddings = true;
  int64_t bos_token_id = 50256, eos_token_id = 50256;
  std::string json;  ///< the file's object, as read (written back on export)

  int64_t inner() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
};

/// Llama's config.json (LlamaConfig's keys and defaults), Llama 2 and 3.
struct LlamaConfig {
  int64_t vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008;
  int64_t num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 0;
  int64_t head_dim = 0;  ///< 0 = hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6, rope_theta = 10000, initializer_range = 0.02;
  double attention_dropout = 0;
  bool attention_bias = false, mlp_bias = false, tie_word_embeddings = false;
  /// rope_scaling: "" (none), "linear" or "llama3", with Llama 3's constants.
  std::string rope_type;
  double rope_factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  int64_t original_max_position_embeddings = 8192;
  std::vector<int64_t> bos_token_ids, eos_token_ids;
  int64_t pad_token_id = -1;  ///< the embeddings' padding row (no gradient); -1 = none
  std::string json;           ///< the file's object, as read (written back on export)

  int64_t kv_heads() const {
    return num_key_value_heads > 0 ? num_key_value_heads : num_attention_heads;
  }
  int64_t head_width() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
};

/// Reads and checks `path` (a config.json); ConfigError naming the file and the key for a file
/// that is missing or not JSON, a model_type that is not gpt2 (llama), a value of the wrong
/// type or out of range, or a key whose math the model does not compute (e.g.
/// `scale_attn_by_inverse_layer_idx: true`, a rope_scaling of type yarn). Warns of keys it does
/// not know.
Gpt2Config read_gpt2_config(const std::string& path);
LlamaConfig read_llama_config(const std::string& path);

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
