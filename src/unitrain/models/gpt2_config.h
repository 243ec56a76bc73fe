#pragma once
// GPT-2's config.json (GPT2Config's keys and defaults), read into the shapes and constants
// unitrain's gpt2 computes with: a key that changes the math in a way it does not compute is
// refused by name, a key it does not know named in a warning (hf_config_file.h).
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain::models {

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

/// Reads and checks `path` (a config.json); ConfigError naming the file and the key for a file
/// that is missing or not JSON, a model_type that is not gpt2, a value of the wrong type or out
/// of range, or a key whose math the model does not compute (e.g.
/// `scale_attn_by_inverse_layer_idx: true`). Warns of keys it does not know.
Gpt2Config read_gpt2_config(const std::string& path);

}  // namespace unitrain::models
