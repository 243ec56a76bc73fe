#pragma once
// The config.json of the llama-shaped families (LlamaConfig's, Qwen2Config's and Qwen3Config's
// keys and defaults), read into the shapes and constants unitrain's llama computes with: a key
// that changes the math in a way it does not compute is refused by name, a key it does not know
// named in a warning (hf_config_file.h).
#include <cstdint>
#include <string>
#include <vector>

namespace unitrain::models {

/// A llama-shaped family's config.json: Llama 2 and 3 (LlamaConfig's keys and defaults), Qwen2
/// (q/k/v biases), Qwen3 (an RMSNorm over each head's q and k), Mistral (a sliding window),
/// Gemma (GeGLU, RMSNorm by 1 + w, embeddings scaled by sqrt(hidden_size), a tied head), Phi-3
/// (q/k/v and gate/up fused, a sliding window), Gemma 2 (soft-capped scores and logits, local
/// and global layers, sandwich norms), Gemma 3 (its text model: q/k norms, local layers with
/// their own rope base).
struct LlamaConfig {
  std::string model_type = "llama";  ///< the family: llama, qwen2, qwen3
  int64_t vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008;
  int64_t num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 0;
  int64_t head_dim = 0;  ///< 0 = hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6, rope_theta = 10000, initializer_range = 0.02;
  double attention_dropout = 0;
  bool attention_bias = false, mlp_bias = false, tie_word_embeddings = false;
  bool qkv_bias = false;       ///< q/k/v_proj's biases (attention_bias; Qwen2's always)
  bool o_bias = false;         ///< o_proj's (attention_bias)
  bool qk_norm = false;        ///< Qwen3: q_norm and k_norm, over each head, before the rotation
  int64_t sliding_window = 0;  ///< Mistral: each token attends the last sliding_window; 0 = all
  bool gelu_tanh = false;      ///< Gemma: GeGLU with the tanh GELU (else SwiGLU with silu)
  bool norm_plus_one = false;  ///< Gemma: RMSNorm's weight w scales by 1 + w, in float32
  bool embed_scale = false;    ///< Gemma: the embeddings times sqrt(hidden_size)
  bool fused_projections = false;  ///< Phi-3: qkv_proj and gate_up_proj, one Linear each
  /// Gemma 2 and 3: norms around each sublayer: post_attention_layernorm on the attention's
  /// output, pre_feedforward_layernorm and post_feedforward_layernorm around the MLP.
  bool sandwich_norms = false;
  double query_pre_attn_scalar = 0;    ///< Gemma 2/3: scores scale by its -1/2 (0: head_dim's)
  double attn_logit_softcapping = 0;   ///< Gemma 2: scores = cap tanh(scores / cap); 0 = none
  double final_logit_softcapping = 0;  ///< Gemma 2: the logits likewise; 0 = none
  /// Gemma 2/3: which layers attend within sliding_window (the others attend all); empty:
  /// every layer alike.
  std::vector<bool> sliding_layers;
  double rope_local_theta = 0;  ///< Gemma 3: the sliding layers' rope base, unscaled (0: none)
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

/// Read and check `path` (a config.json of the family each names) as read_gpt2_config does
/// (e.g. a rope_scaling of type yarn is refused, and Qwen's use_sliding_window: true).
LlamaConfig read_llama_config(const std::string& path);
LlamaConfig read_qwen2_config(const std::string& path);
LlamaConfig read_qwen3_config(const std::string& path);
LlamaConfig read_mistral_config(const std::string& path);
LlamaConfig read_gemma_config(const std::string& path);
LlamaConfig read_phi3_config(const std::string& path);
LlamaConfig read_gemma2_config(const std::string& path);
LlamaConfig read_gemma3_text_config(const std::string& path);

/// The llama-shaped families' tensor names (LlamaForCausalLM's, Qwen2ForCausalLM's, ...): a file
/// of the base model's lacks "model."; rotary frequency buffers and a tied head's copy are no
/// weights of the model.
std::string llama_model_name(const std::string& name, bool tied);

}  // namespace unitrain::models
