#include "unitrain/models/llama_config.h"

#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/models/hf_config_file.h"

namespace unitrain::models {
namespace {

/// Llama's rotary embeddings: rope_theta and rope_scaling (transformers 4), or both inside
/// rope_parameters (transformers 5); the scalings llama computes (default, linear, llama3).
void read_rope(ConfigFile& f, LlamaConfig& c) {
  f.number("rope_theta", c.rope_theta, 0, 1e30, /*above_min=*/true);
  f.harmless({"rope_scaling", "rope_parameters"});
  nlohmann::json scaling;
  const char* scaling_key = f.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (f.has(scaling_key)) scaling = f.at(scaling_key);
  if (scaling.is_null()) return;
  const std::string where = f.where(scaling_key);
  UT_CHECK(scaling.is_object(), where, " must be an object, got ", json_excerpt(scaling));
  std::string type = "default";
  for (const char* k : {"type", "rope_type"}) {  // rope_type wins where both are given
    if (!scaling.contains(k)) continue;
    UT_CHECK(scaling.at(k).is_string(), where, ".", k, " must be a string, got ",
             json_excerpt(scaling.at(k)));
    type = scaling.at(k).get<std::string>();
  }
  /// scaling[k] when given: a number in (min, max].
  auto num = [&](const char* k, double& out, double min, double max) {
    if (!scaling.contains(k)) return;
    const nlohmann::json& v = scaling.at(k);
    UT_CHECK(v.is_number() && v.get<double>() > min && v.get<double>() <= max, where, ".", k,
             " must be a number in (", min, ", ", max, "], got ", json_excerpt(v));
    out = v.get<double>();
  };
  num("rope_theta", c.rope_theta, 0, 1e30);
  UT_CHECK(type == "default" || type == "llama3" || type == "linear", where, " has rope_type '",
           text_excerpt(type), "'; ", c.model_type,
           " computes default, linear and llama3 rotary embeddings (not dynamic, yarn, "
           "longrope)");
  if (type == "llama3" || type == "linear") {
    c.rope_type = type;
    UT_CHECK(scaling.contains("factor"), where, ".factor is missing (", type, " scaling needs it)");
    num("factor", c.rope_factor, 0, 1e9);
  }
  if (type == "llama3") {
    num("low_freq_factor", c.low_freq_factor, 0, 1e9);
    num("high_freq_factor", c.high_freq_factor, 0, 1e9);
    if (scaling.contains("original_max_position_embeddings")) {
      const nlohmann::json& v = scaling.at("original_max_position_embeddings");
      UT_CHECK(v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxPositions,
               where, ".original_max_position_embeddings must be an integer in [1, ", kMaxPositions,
               "], got ", json_excerpt(v));
      c.original_max_position_embeddings = v.get<int64_t>();
    }
    UT_CHECK(c.high_freq_factor != c.low_freq_factor, where,
             ": high_freq_factor and low_freq_factor must differ");
  }
  double attention_factor = 1;
  num("attention_factor", attention_factor, 0, 1e9);
  UT_CHECK(attention_factor == 1, where, ".attention_factor is ", attention_factor, "; ",
           c.model_type, " computes rotary embeddings unscaled");
}

/// What the llama-shaped families' config.json files share: sizes, norms, token ids, the
/// activation and the rotary embeddings.
void read_llama_shape(ConfigFile& f, LlamaConfig& c) {
  c.json = f.text();
  f.integer("vocab_size", c.vocab_size, 1, kMaxVocab);
  f.integer("hidden_size", c.hidden_size, 1, kMaxWidth);
  f.integer("intermediate_size", c.intermediate_size, 1, kMaxInner);
  f.integer("num_hidden_layers", c.num_hidden_layers, 1, kMaxLayers);
  f.integer("num_attention_heads", c.num_attention_heads, 1, kMaxHeads);
  f.integer("num_key_value_heads", c.num_key_value_heads, 1, kMaxHeads, /*nullable=*/true);
  f.integer("head_dim", c.head_dim, 1, kMaxWidth, /*nullable=*/true);
  f.integer("max_position_embeddings", c.max_position_embeddings, 1, kMaxPositions);
  f.number("rms_norm_eps", c.rms_norm_eps, 0, 1, /*above_min=*/true);
  f.number("initializer_range", c.initializer_range, 0, 10);
  f.number("attention_dropout", c.attention_dropout, 0, 0.999);
  f.boolean("tie_word_embeddings", c.tie_word_embeddings);
  f.ids("bos_token_id", c.bos_token_ids, c.vocab_size);
  f.ids("eos_token_id", c.eos_token_ids, c.vocab_size);
  f.integer("pad_token_id", c.pad_token_id, 0, kMaxTokenId, /*nullable=*/true);
  if (!c.gelu_tanh) {
    std::string act = "silu";
    f.text("hidden_act", act);
    UT_CHECK(act == "silu" || act == "swish", f.where("hidden_act"), " is '", text_excerpt(act),
             "'; ", c.model_type, " computes SwiGLU with silu");
  }
  UT_CHECK(c.num_attention_heads % c.kv_heads() == 0, f.where("num_key_value_heads"), " (",
           c.kv_heads(), ") must divide num_attention_heads (", c.num_attention_heads, ")");
  UT_CHECK(c.head_dim > 0 || c.hidden_size % c.num_attention_heads == 0, f.where("hidden_size"),
           " (", c.hidden_size, ") must be a multiple of num_attention_heads (",
           c.num_attention_heads, ") when head_dim is not given");
  UT_CHECK(c.head_width() % 2 == 0, f.where("head_dim"),
           ": rotary embeddings need an even head width, got ", c.head_width());
  read_rope(f, c);
}

/// Keys of models that compute what no llama-shaped family here computes: refused unless null
/// (`more`: the family's own).
void refuse_other_math(ConfigFile& f, const LlamaConfig& c, const std::vector<const char*>& more) {
  std::vector<const char*> keys = {"attn_logit_softcapping",
                                   "final_logit_softcapping",
                                   "query_pre_attn_scalar",
                                   "partial_rotary_factor",
                                   "qk_norm",
                                   "use_qk_norm",
                                   "logits_scaling",
                                   "embedding_multiplier",
                                   "residual_multiplier",
                                   "attention_multiplier",
                                   "num_experts"};
  keys.insert(keys.end(), more.begin(), more.end());
  for (const char* key : keys) {
    if (f.taken(key)) continue;  // the family computes it (Gemma 2's soft-capping)
    f.refuse_unless(key, nullptr, c.model_type + " does not compute it");
  }
}

/// Qwen's sliding-window attention: off (use_sliding_window false, as the hub's Qwen2 and Qwen3
/// files have it), or refused; its window sizes then change nothing.
void read_qwen_window(ConfigFile& f, const LlamaConfig& c) {
  bool sliding = false;
  f.boolean("use_sliding_window", sliding);
  UT_CHECK(!sliding, f.where("use_sliding_window"), " is true: ", c.model_type,
           " computes full attention in every layer (set it false, as the hub's files have it)");
  if (f.has("layer_types")) {
    const nlohmann::json& types = f.at("layer_types");
    UT_CHECK(types.is_array(), f.where("layer_types"), " must be a list, got ",
             json_excerpt(types));
    for (const nlohmann::json& t : types) {
      UT_CHECK(t == "full_attention", f.where("layer_types"), " holds ", json_excerpt(t), ": ",
               c.model_type, " computes full attention in every layer");
    }
  }
  f.harmless({"sliding_window", "max_window_layers", "layer_types"});
}

/// The end of every llama-shaped reader: keys of math no family here computes refused (`more`:
/// the family's own), the keys every config may hold and the token ids taken as read, the
/// others named in a warning.
void finish_reading(ConfigFile& f, const LlamaConfig& c, const std::vector<const char*>& more) {
  refuse_other_math(f, c, more);
  f.harmless_common();
  f.harmless({"bos_token_id", "eos_token_id"});
  f.warn_unknown(c.model_type.c_str());
}

/// Mistral's and Phi-3's sliding_window: null = none (every token attends all before it).
void read_sliding_window(ConfigFile& f, LlamaConfig& c) {
  if (f.null("sliding_window")) c.sliding_window = 0;
  f.integer("sliding_window", c.sliding_window, 1, kMaxPositions, /*nullable=*/true);
}

/// Qwen2Config's and Qwen3Config's defaults.
LlamaConfig qwen_defaults(const char* type) {
  LlamaConfig c;
  c.model_type = type;
  c.vocab_size = 151936;
  c.intermediate_size = 22016;
  c.max_position_embeddings = 32768;
  return c;
}

}  // namespace

LlamaConfig read_llama_config(const std::string& path) {
  ConfigFile f(path, "llama");
  LlamaConfig c;
  read_llama_shape(f, c);
  f.boolean("attention_bias", c.attention_bias);
  f.boolean("mlp_bias", c.mlp_bias);
  c.qkv_bias = c.o_bias = c.attention_bias;
  f.refuse_unless("pretraining_tp", 1,
                  "llama computes its products whole (set it to 1: the math is the same, "
                  "sliced)");
  refuse_other_math(f, c, {"sliding_window"});
  f.harmless_common();
  f.harmless({"bos_token_id", "eos_token_id", "use_sliding_window", "mlp_only_layers"});
  f.warn_unknown("llama");
  return c;
}

LlamaConfig read_qwen2_config(const std::string& path) {
  ConfigFile f(path, "qwen2");
  LlamaConfig c = qwen_defaults("qwen2");
  read_llama_shape(f, c);
  c.qkv_bias = true;  // Qwen2Attention: q, k and v with biases, o without
  read_qwen_window(f, c);
  finish_reading(f, c, {});
  return c;
}

LlamaConfig read_qwen3_config(const std::string& path) {
  ConfigFile f(path, "qwen3");
  LlamaConfig c = qwen_defaults("qwen3");
  c.head_dim = 128;
  read_llama_shape(f, c);
  f.boolean("attention_bias", c.attention_bias);
  c.qkv_bias = c.o_bias = c.attention_bias;
  c.qk_norm = true;  // Qwen3Attention: q_norm and k_norm over each head
  read_qwen_window(f, c);
  finish_reading(f, c, {});
  return c;
}

LlamaConfig read_mistral_config(const std::string& path) {
  ConfigFile f(path, "mistral");
  LlamaConfig c;  // MistralConfig's defaults (Mistral 7B's shape)
  c.model_type = "mistral";
  c.intermediate_size = 14336;
  c.num_key_value_heads = 8;
  c.max_position_embeddings = 4096 * 32;
  c.sliding_window = 4096;
  read_llama_shape(f, c);
  read_sliding_window(f, c);  // null: Mistral 7B v0.2 and later
  finish_reading(f, c, {});
  return c;
}

namespace {

/// GemmaConfig's shape and constants, which Gemma 2 and 3 keep (a tied head, GeGLU, RMSNorm by
/// 1 + w, scaled embeddings), with `type`.
LlamaConfig gemma_defaults(const char* type) {
  LlamaConfig c;  // GemmaConfig's defaults (Gemma 7B's shape)
  c.model_type = type;
  c.vocab_size = 256000;
  c.hidden_size = 3072;
  c.intermediate_size = 24576;
  c.num_hidden_layers = 28;
  c.num_attention_heads = 16;
  c.head_dim = 256;
  c.max_position_embeddings = 8192;
  c.tie_word_embeddings = true;
  c.pad_token_id = 0;
  c.gelu_tanh = c.norm_plus_one = c.embed_scale = true;
  return c;
}

/// GemmaMLP's activation: hidden_activation, else the tanh GELU whatever hidden_act says
/// (transformers reads the original files' hidden_act "gelu" so).
void read_gemma_activation(ConfigFile& f, const LlamaConfig& c) {
  std::string act = "gelu_pytorch_tanh";
  f.text("hidden_activation", act);
  UT_CHECK(act == "gelu_pytorch_tanh" || act == "gelu_new", f.where("hidden_activation"), " is '",
           text_excerpt(act), "'; ", c.model_type,
           " computes GeGLU with the tanh GELU (gelu_pytorch_tanh)");
  f.harmless({"hidden_act"});
}

/// Gemma 2 and 3's layer kinds: layer_types (transformers' newer files), else every
/// `pattern`-th layer global and the others local ("sliding_attention" / "full_attention").
void read_layer_types(ConfigFile& f, LlamaConfig& c, int64_t pattern) {
  c.sliding_layers.assign(static_cast<size_t>(c.num_hidden_layers), false);
  if (!f.has("layer_types")) {
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) c.sliding_layers[i] = (i + 1) % pattern != 0;
    return;
  }
  const nlohmann::json& types = f.at("layer_types");
  UT_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == c.num_hidden_layers,
           f.where("layer_types"), " must be a list of num_hidden_layers (", c.num_hidden_layers,
           ") entries, got ", json_excerpt(types));
  for (size_t i = 0; i < types.size(); ++i) {
    UT_CHECK(types[i] == "sliding_attention" || types[i] == "full_attention",
             f.where("layer_types"), "[", i, "] is ", json_excerpt(types[i]),
             "; a layer is sliding_attention or full_attention");
    c.sliding_layers[i] = types[i] == "sliding_attention";
  }
}

/// A soft-capping key: null (none) or a number > 0.
void read_softcap(ConfigFile& f, const char* key, double& out) {
  if (f.null(key)) return;
  f.number(key, out, 0, 1e9, /*above_min=*/true);
}

/// What every Gemma's config.json holds: the llama shape, GemmaMLP's activation, the biases.
void read_gemma_shape(ConfigFile& f, LlamaConfig& c) {
  read_llama_shape(f, c);
  read_gemma_activation(f, c);
  f.boolean("attention_bias", c.attention_bias);
  c.qkv_bias = c.o_bias = c.attention_bias;
}

/// Gemma 2's and 3's attention keys: the scores' scale, the soft caps, the local window.
void read_gemma2_attention(ConfigFile& f, LlamaConfig& c) {
  f.number("query_pre_attn_scalar", c.query_pre_attn_scalar, 0, 1e9, /*above_min=*/true);
  read_softcap(f, "attn_logit_softcapping", c.attn_logit_softcapping);
  read_softcap(f, "final_logit_softcapping", c.final_logit_softcapping);
  f.integer("sliding_window", c.sliding_window, 1, kMaxPositions);
}

}  // namespace

LlamaConfig read_gemma_config(const std::string& path) {
  ConfigFile f(path, "gemma");
  LlamaConfig c = gemma_defaults("gemma");
  read_gemma_shape(f, c);
  finish_reading(f, c, {"sliding_window"});
  return c;
}

LlamaConfig read_gemma2_config(const std::string& path) {
  ConfigFile f(path, "gemma2");
  LlamaConfig c = gemma_defaults("gemma2");  // Gemma2Config's (Gemma 2 9B's shape)
  c.hidden_size = 3584;
  c.intermediate_size = 14336;
  c.num_hidden_layers = 42;
  c.num_key_value_heads = 8;
  c.sliding_window = 4096;
  c.query_pre_attn_scalar = 256;
  c.attn_logit_softcapping = 50;
  c.final_logit_softcapping = 30;
  c.sandwich_norms = true;
  read_gemma_shape(f, c);
  read_gemma2_attention(f, c);
  read_layer_types(f, c, 2);  // even layers local, odd ones global
  f.harmless({"cache_implementation", "sliding_window_size"});
  finish_reading(f, c, {"use_bidirectional_attention"});
  return c;
}

LlamaConfig read_gemma3_text_config(const std::string& path) {
  ConfigFile f(path, "gemma3_text");
  LlamaConfig c = gemma_defaults("gemma3_text");  // Gemma3TextConfig's (Gemma 3 4B's shape)
  c.vocab_size = 262208;
  c.hidden_size = 2304;
  c.intermediate_size = 9216;
  c.num_hidden_layers = 26;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.max_position_embeddings = 131072;
  c.rope_theta = 1000000;
  c.rope_local_theta = 10000;
  c.sliding_window = 4096;
  c.query_pre_attn_scalar = 256;
  c.qk_norm = c.sandwich_norms = true;
  read_gemma_shape(f, c);  // rope_theta and rope_scaling: the global layers'
  read_gemma2_attention(f, c);
  f.number("rope_local_base_freq", c.rope_local_theta, 0, 1e30, /*above_min=*/true);
  int64_t pattern = 6;
  f.integer("sliding_window_pattern", pattern, 1, kMaxLayers);
  read_layer_types(f, c, pattern);
  f.harmless({"cache_implementation"});
  finish_reading(f, c, {"use_bidirectional_attention"});
  return c;
}

LlamaConfig read_phi3_config(const std::string& path) {
  ConfigFile f(path, "phi3");
  LlamaConfig c;  // Phi3Config's defaults (Phi-3-mini's shape)
  c.model_type = "phi3";
  c.vocab_size = 32064;
  c.hidden_size = 3072;
  c.intermediate_size = 8192;
  c.max_position_embeddings = 4096;
  c.rms_norm_eps = 1e-5;
  c.fused_projections = true;
  read_llama_shape(f, c);
  read_sliding_window(f, c);
  // The residual and embedding dropouts transformers applies in training: unitrain's llama has
  // none (the hub's files set them 0).
  for (const char* key : {"resid_pdrop", "embd_pdrop"}) {
    f.refuse_unless(key, 0.0, "phi3 here applies no residual or embedding dropout (set it 0)");
  }
  f.harmless({"original_max_position_embeddings"});
  finish_reading(f, c, {});
  return c;
}

std::string llama_model_name(const std::string& name, bool tied) {
  const std::string buffer = "rotary_emb.inv_freq";  // computed, not a weight
  if (name.size() >= buffer.size() &&
      name.compare(name.size() - buffer.size(), buffer.size(), buffer) == 0) {
    return "";
  }
  if (name == "lm_head.weight") return tied ? "" : name;
  if (name.rfind("model.", 0) == 0) return name;
  return "model." + name;
}

}  // namespace unitrain::models
