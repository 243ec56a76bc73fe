#include "unitrain/models/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "unitrain/core/error.h"

namespace unitrain::models {
namespace {

using nlohmann::json;

/// A config.json's object and where it came from, read key by key.
class ConfigFile {
 public:
  ConfigFile(const std::string& path, const char* model_type) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    UT_CHECK(in.good(), "model.args: cannot read '", path, "' (a Hugging Face folder holds "
             "config.json beside its weights)");
    std::stringstream bytes;
    bytes << in.rdbuf();
    text_ = bytes.str();
    try {
      j_ = json::parse(text_);
    } catch (const json::exception& e) {
      throw ConfigError(detail::concat("model.args: '", path, "' is not JSON: ", e.what()));
    }
    UT_CHECK(j_.is_object(), "model.args: '", path, "' is not a JSON object");
    const std::string type = j_.value("model_type", std::string());
    UT_CHECK(type == model_type, "model.args: '", path, "' has model_type '", type,
             "', not '", model_type, "': use model.type ",
             type == "gpt2" || type == "llama" ? type : "gpt2 or llama",
             " for it (unitrain builds gpt2 and llama from a Hugging Face folder)");
  }

  const std::string& text() const { return text_; }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const json& at(const char* key) const { return j_.at(key); }

  void integer(const char* key, int64_t& out, int64_t min) {
    seen_.insert(key);
    if (!has(key)) return;
    const json& v = j_.at(key);
    UT_CHECK(v.is_number_integer(), where(key), " must be an integer, got ", v.dump());
    out = v.get<int64_t>();
    UT_CHECK(out >= min, where(key), " must be >= ", min, ", got ", out);
  }
  void number(const char* key, double& out, double min, double max) {
    seen_.insert(key);
    if (!has(key)) return;
    const json& v = j_.at(key);
    UT_CHECK(v.is_number(), where(key), " must be a number, got ", v.dump());
    out = v.get<double>();
    UT_CHECK(out >= min && out <= max, where(key), " must be in [", min, ", ", max, "], got ", out);
  }
  void boolean(const char* key, bool& out) {
    seen_.insert(key);
    if (!has(key)) return;
    UT_CHECK(j_.at(key).is_boolean(), where(key), " must be true or false, got ", j_.at(key).dump());
    out = j_.at(key).get<bool>();
  }
  void text(const char* key, std::string& out) {
    seen_.insert(key);
    if (!has(key)) return;
    UT_CHECK(j_.at(key).is_string(), where(key), " must be a string, got ", j_.at(key).dump());
    out = j_.at(key).get<std::string>();
  }
  /// An id or a list of ids (Llama 3's eos_token_id).
  void ids(const char* key, std::vector<int64_t>& out) {
    seen_.insert(key);
    if (!has(key)) return;
    const json& v = j_.at(key);
    out.clear();
    for (const json& id : v.is_array() ? v : json::array({v})) {
      UT_CHECK(id.is_number_integer(), where(key), " must be a token id or a list of them, got ",
               v.dump());
      out.push_back(id.get<int64_t>());
    }
  }
  /// A key the model does not compute unless it has `harmless` (a JSON value): refused by name.
  void refuse_unless(const char* key, const json& harmless, const std::string& why) {
    seen_.insert(key);
    if (!has(key) || j_.at(key) == harmless) return;
    throw ConfigError(detail::concat(where(key), " is ", j_.at(key).dump(), ": ", why));
  }
  /// Keys that change nothing the model computes (bookkeeping, generation, other heads).
  void harmless(std::initializer_list<const char*> keys) {
    for (const char* k : keys) seen_.insert(k);
  }
  /// Warns of every key not read, refused or named harmless.
  void warn_unknown(const char* model) const {
    std::vector<std::string> unknown;
    for (const auto& item : j_.items()) {
      if (!seen_.count(item.key())) unknown.push_back(item.key());
    }
    if (unknown.empty()) return;
    spdlog::warn("{}: {} has keys {} does not know ({}): they are ignored; if one changes the "
                 "model's math, its outputs will differ from Hugging Face's",
                 model, path_, model, fmt::join(unknown, ", "));
  }
  std::string where(const char* key) const { return fmt::format("{} key {}", path_, key); }

 private:
  std::string path_, text_;
  json j_;
  std::set<std::string> seen_;
};

/// Keys every Hugging Face config may hold that change no math of a causal LM's forward.
const std::initializer_list<const char*> kCommonHarmless = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "use_cache",
    "_name_or_path", "initializer_range", "pad_token_id", "id2label", "label2id",
    "output_attentions", "output_hidden_states", "return_dict", "task_specific_params",
    "gradient_checkpointing", "problem_type", "tokenizer_class", "prefix", "max_length",
    "do_sample", "temperature", "top_p", "top_k", "num_beams", "repetition_penalty",
    "is_encoder_decoder", "is_decoder", "chunk_size_feed_forward", "tie_encoder_decoder",
    "use_bfloat16", "finetuning_task", "decoder_start_token_id", "sep_token_id",
    "_attn_implementation", "attn_implementation", "quantization_config_applied",
    "torchscript", "pruned_heads_applied", "keys_to_ignore_at_inference"};

/// Llama's rotary embeddings: rope_theta and rope_scaling (transformers 4), or both inside
/// rope_parameters (transformers 5); the scalings llama computes (default, linear, llama3).
void read_rope(ConfigFile& f, LlamaConfig& c) {
  f.number("rope_theta", c.rope_theta, 1e-9, 1e30);
  f.harmless({"rope_scaling", "rope_parameters"});
  nlohmann::json scaling;
  const char* scaling_key = f.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (f.has(scaling_key)) scaling = f.at(scaling_key);
  if (!scaling.is_null()) {
    UT_CHECK(scaling.is_object(), f.where(scaling_key), " must be an object, got ", scaling.dump());
    const std::string type = scaling.value("rope_type", scaling.value("type", std::string("default")));
    auto num = [&](const char* k, double& out) {
      if (!scaling.contains(k)) return;
      UT_CHECK(scaling.at(k).is_number(), f.where(scaling_key), ".", k, " must be a number, got ",
               scaling.at(k).dump());
      out = scaling.at(k).get<double>();
    };
    num("rope_theta", c.rope_theta);
    if (type == "llama3" || type == "linear") {
      c.rope_type = type;
      UT_CHECK(scaling.contains("factor"), f.where(scaling_key), ".factor is missing (", type,
               " scaling needs it)");
      num("factor", c.rope_factor);
      UT_CHECK(c.rope_factor > 0, f.where(scaling_key), ".factor must be > 0, got ", c.rope_factor);
    }
    if (type == "llama3") {
      num("low_freq_factor", c.low_freq_factor);
      num("high_freq_factor", c.high_freq_factor);
      double original = double(c.original_max_position_embeddings);
      num("original_max_position_embeddings", original);
      c.original_max_position_embeddings = int64_t(original);
      UT_CHECK(c.high_freq_factor != c.low_freq_factor, f.where(scaling_key),
               ": high_freq_factor and low_freq_factor must differ");
    }
    UT_CHECK(type == "default" || type == "llama3" || type == "linear", f.where(scaling_key),
             " has rope_type '", type, "'; llama computes default, linear and llama3 rotary "
             "embeddings (not dynamic, yarn, longrope)");
    double attention_factor = 1;
    num("attention_factor", attention_factor);
    UT_CHECK(attention_factor == 1, f.where(scaling_key), ".attention_factor is ",
             attention_factor, "; llama computes rotary embeddings unscaled");
  }
}

}  // namespace

std::string HfModelOptions::config_path(const std::string& p) const {
  UT_CHECK(!pretrained.empty() || !config.empty(), "give ", p, "pretrained (a Hugging Face "
           "folder: config.json and model.safetensors) or ", p, "config (a config.json, for a "
           "fresh model of its shape)");
  UT_CHECK(pretrained.empty() || config.empty(), p, "pretrained and ", p, "config are both "
           "given: the folder's config.json is the model's; keep one");
  return pretrained.empty() ? config : pretrained + "/config.json";
}

Gpt2Config read_gpt2_config(const std::string& path) {
  ConfigFile f(path, "gpt2");
  Gpt2Config c;
  c.json = f.text();
  f.integer("vocab_size", c.vocab_size, 1);
  f.integer("n_positions", c.n_positions, 1);
  f.integer("n_embd", c.n_embd, 1);
  f.integer("n_layer", c.n_layer, 1);
  f.integer("n_head", c.n_head, 1);
  f.integer("n_inner", c.n_inner, 1);
  f.text("activation_function", c.activation_function);
  static const std::set<std::string> kActivations = {"gelu_new", "gelu_pytorch_tanh",
                                                     "gelu_fast", "gelu", "relu", "silu",
                                                     "swish"};
  UT_CHECK(kActivations.count(c.activation_function), f.where("activation_function"), " is '",
           c.activation_function, "'; gpt2 computes gelu_new (tanh GELU), gelu_pytorch_tanh, "
           "gelu_fast, gelu, relu and silu");
  f.number("resid_pdrop", c.resid_pdrop, 0, 0.999);
  f.number("embd_pdrop", c.embd_pdrop, 0, 0.999);
  f.number("attn_pdrop", c.attn_pdrop, 0, 0.999);
  f.number("layer_norm_epsilon", c.layer_norm_epsilon, 0, 1);
  f.number("initializer_range", c.initializer_range, 0, 10);
  f.boolean("tie_word_embeddings", c.tie_word_embeddings);
  std::vector<int64_t> bos, eos;
  f.ids("bos_token_id", bos);
  f.ids("eos_token_id", eos);
  if (!bos.empty()) c.bos_token_id = bos.front();
  if (!eos.empty()) c.eos_token_id = eos.front();
  UT_CHECK(c.n_embd % c.n_head == 0, f.where("n_embd"), " (", c.n_embd,
           ") must be a multiple of n_head (", c.n_head, ")");
  f.refuse_unless("scale_attn_weights", true, "gpt2 always scales attention by 1/sqrt(head_dim)");
  f.refuse_unless("scale_attn_by_inverse_layer_idx", false,
                  "gpt2 does not scale attention by the layer's index");
  f.refuse_unless("reorder_and_upcast_attn", false,
                  "gpt2 does not reorder the attention's product (set it false: in float32 it "
                  "changes nothing)");
  f.refuse_unless("add_cross_attention", false, "gpt2 is decoder-only (no cross-attention)");
  f.refuse_unless("pruned_heads", json::object(), "gpt2 does not prune attention heads");
  f.harmless(kCommonHarmless);
  f.harmless({"n_ctx", "bos_token_id", "eos_token_id", "summary_type", "summary_use_proj",
              "summary_activation", "summary_proj_to_labels", "summary_first_dropout"});
  f.warn_unknown("gpt2");
  return c;
}

LlamaConfig read_llama_config(const std::string& path) {
  ConfigFile f(path, "llama");
  LlamaConfig c;
  c.json = f.text();
  f.integer("vocab_size", c.vocab_size, 1);
  f.integer("hidden_size", c.hidden_size, 1);
  f.integer("intermediate_size", c.intermediate_size, 1);
  f.integer("num_hidden_layers", c.num_hidden_layers, 1);
  f.integer("num_attention_heads", c.num_attention_heads, 1);
  f.integer("num_key_value_heads", c.num_key_value_heads, 1);
  f.integer("head_dim", c.head_dim, 1);
  f.integer("max_position_embeddings", c.max_position_embeddings, 1);
  f.number("rms_norm_eps", c.rms_norm_eps, 0, 1);
  f.number("initializer_range", c.initializer_range, 0, 10);
  f.number("attention_dropout", c.attention_dropout, 0, 0.999);
  f.boolean("attention_bias", c.attention_bias);
  f.boolean("mlp_bias", c.mlp_bias);
  f.boolean("tie_word_embeddings", c.tie_word_embeddings);
  f.ids("bos_token_id", c.bos_token_ids);
  f.ids("eos_token_id", c.eos_token_ids);
  f.integer("pad_token_id", c.pad_token_id, 0);
  std::string act = "silu";
  f.text("hidden_act", act);
  UT_CHECK(act == "silu" || act == "swish", f.where("hidden_act"), " is '", act,
           "'; llama computes SwiGLU with silu");
  UT_CHECK(c.num_attention_heads % c.kv_heads() == 0, f.where("num_key_value_heads"), " (",
           c.kv_heads(), ") must divide num_attention_heads (", c.num_attention_heads, ")");
  UT_CHECK(c.head_dim > 0 || c.hidden_size % c.num_attention_heads == 0, f.where("hidden_size"),
           " (", c.hidden_size, ") must be a multiple of num_attention_heads (",
           c.num_attention_heads, ") when head_dim is not given");
  UT_CHECK(c.head_width() % 2 == 0, f.where("head_dim"), ": rotary embeddings need an even head "
           "width, got ", c.head_width());
  read_rope(f, c);
  f.refuse_unless("pretraining_tp", 1, "llama computes its products whole (set it to 1: the "
                  "math is the same, sliced)");
  for (const char* key : {"sliding_window", "attn_logit_softcapping", "final_logit_softcapping",
                          "query_pre_attn_scalar", "partial_rotary_factor", "qk_norm",
                          "use_qk_norm", "logits_scaling", "embedding_multiplier",
                          "residual_multiplier", "attention_multiplier", "num_experts"}) {
    f.refuse_unless(key, nullptr, "llama does not compute it");
  }
  f.harmless(kCommonHarmless);
  f.harmless({"bos_token_id", "eos_token_id", "use_sliding_window", "mlp_only_layers"});
  f.warn_unknown("llama");
  return c;
}

std::string generation_config_json(const std::vector<int64_t>& bos,
                                   const std::vector<int64_t>& eos) {
  nlohmann::json j = nlohmann::json::object();
  j["_from_model_config"] = true;
  if (!bos.empty()) j["bos_token_id"] = bos.size() == 1 ? nlohmann::json(bos[0]) : nlohmann::json(bos);
  if (!eos.empty()) j["eos_token_id"] = eos.size() == 1 ? nlohmann::json(eos[0]) : nlohmann::json(eos);
  return j.dump(2) + "\n";
}

}  // namespace unitrain::models
