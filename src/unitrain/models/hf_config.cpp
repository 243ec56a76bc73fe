#include "unitrain/models/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/json_excerpt.h"

namespace unitrain::models {
namespace {

using nlohmann::json;

/// Sizes no model has (the largest hub models stay far below them): a config.json beyond one
/// is damaged, and is refused before anything of its size is allocated or looped over.
constexpr int64_t kMaxVocab = int64_t(1) << 24;
constexpr int64_t kMaxWidth = int64_t(1) << 18;  ///< n_embd, hidden_size, head_dim
constexpr int64_t kMaxInner = int64_t(1) << 20;  ///< n_inner, intermediate_size
constexpr int64_t kMaxLayers = int64_t(1) << 14;
constexpr int64_t kMaxHeads = int64_t(1) << 14;
constexpr int64_t kMaxPositions = int64_t(1) << 26;
constexpr int64_t kMaxTokenId = (int64_t(1) << 31) - 1;
/// A config.json is a few kilobytes; a generation_config.json too.
constexpr uintmax_t kMaxJsonBytes = uintmax_t(64) << 20;

/// The JSON object of file `path` (a config.json or generation_config.json), or ConfigError
/// naming it: missing, too large, not JSON or not an object.
json read_json_object(const std::string& path, std::string* text_out) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  UT_CHECK(!ec, "model.args: cannot read '", path, "': ", ec.message(),
           " (a Hugging Face folder holds config.json beside its weights)");
  UT_CHECK(size <= kMaxJsonBytes, "model.args: '", path, "' holds ", size, " bytes, more than ",
           "a Hugging Face config file (at most ", kMaxJsonBytes, ")");
  std::ifstream in(path, std::ios::binary);
  UT_CHECK(in.good(), "model.args: cannot read '", path, "'");
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string text = bytes.str();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError(detail::concat("model.args: '", path, "' is not JSON: ", json_error_text(e)));
  }
  UT_CHECK(j.is_object(), "model.args: '", path, "' is not a JSON object");
  if (text_out != nullptr) *text_out = std::move(text);
  return j;
}

/// A token id or a list of them (Llama 3's eos_token_id) at `where`, each in [0, `vocab`).
std::vector<int64_t> token_ids(const json& v, const std::string& where, int64_t vocab) {
  std::vector<int64_t> out;
  for (const json& id : v.is_array() ? v : json::array({v})) {
    UT_CHECK(id.is_number_integer(), where, " must be a token id or a list of them, got ",
             json_excerpt(v));
    out.push_back(id.get<int64_t>());
    UT_CHECK(out.back() >= 0 && out.back() < vocab, where, " must hold ids in [0, vocab_size ",
             vocab, "), got ", json_excerpt(v));
  }
  return out;
}

/// A config.json's object and where it came from, read key by key.
class ConfigFile {
 public:
  ConfigFile(const std::string& path, const char* model_type)
      : path_(path), j_(read_json_object(path, &text_)) {
    const json* type_value = j_.contains("model_type") ? &j_.at("model_type") : nullptr;
    const std::string type = type_value != nullptr && type_value->is_string()
                                 ? type_value->get<std::string>()
                                 : std::string();
    UT_CHECK(type == model_type, "model.args: '", path, "' has model_type ",
             type_value == nullptr     ? std::string("(none)")
             : type_value->is_string() ? "'" + text_excerpt(type) + "'"
                                       : json_excerpt(*type_value),
             ", not '", model_type, "': use model.type ",
             type == "gpt2" || type == "llama" ? type : "gpt2 or llama",
             " for it (unitrain builds gpt2 and llama from a Hugging Face folder)");
  }

  const std::string& text() const { return text_; }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const json& at(const char* key) const { return j_.at(key); }

  /// Whether `key` holds a value; a null one is refused unless `nullable` (then: not given).
  bool given(const char* key, bool nullable = false) {
    seen_.insert(key);
    if (!j_.contains(key)) return false;
    if (!j_.at(key).is_null()) return true;
    UT_CHECK(nullable, where(key), " is null; give it a value or leave the key out");
    return false;
  }
  void integer(const char* key, int64_t& out, int64_t min, int64_t max, bool nullable = false) {
    if (!given(key, nullable)) return;
    const json& v = j_.at(key);
    UT_CHECK(v.is_number_integer(), where(key), " must be an integer, got ", json_excerpt(v));
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= uint64_t(max) && v.get<int64_t>() >= min
                          : v.get<int64_t>() >= min && v.get<int64_t>() <= max;
    UT_CHECK(fits, where(key), " must be in [", min, ", ", max, "], got ", json_excerpt(v));
    out = v.get<int64_t>();
  }
  /// A number in [min, max], or in (min, max] with `above_min`.
  void number(const char* key, double& out, double min, double max, bool above_min = false) {
    if (!given(key)) return;
    const json& v = j_.at(key);
    UT_CHECK(v.is_number(), where(key), " must be a number, got ", json_excerpt(v));
    const double x = v.get<double>();
    UT_CHECK((above_min ? x > min : x >= min) && x <= max, where(key), " must be in ",
             above_min ? "(" : "[", min, ", ", max, "], got ", json_excerpt(v));
    out = x;
  }
  void boolean(const char* key, bool& out) {
    if (!given(key)) return;
    UT_CHECK(j_.at(key).is_boolean(), where(key), " must be true or false, got ",
             json_excerpt(j_.at(key)));
    out = j_.at(key).get<bool>();
  }
  void text(const char* key, std::string& out) {
    if (!given(key)) return;
    UT_CHECK(j_.at(key).is_string(), where(key), " must be a string, got ",
             json_excerpt(j_.at(key)));
    out = j_.at(key).get<std::string>();
  }
  /// An id or a list of ids (Llama 3's eos_token_id), each in [0, vocab); null = none.
  void ids(const char* key, std::vector<int64_t>& out, int64_t vocab) {
    if (!given(key, /*nullable=*/true)) return;
    out = token_ids(j_.at(key), where(key), vocab);
  }
  /// A key the model does not compute unless it has `harmless` (a JSON value): refused by name.
  void refuse_unless(const char* key, const json& harmless, const std::string& why) {
    seen_.insert(key);
    if (!has(key) || j_.at(key) == harmless) return;
    throw ConfigError(detail::concat(where(key), " is ", json_excerpt(j_.at(key)), ": ", why));
  }
  /// Keys that change nothing the model computes (bookkeeping, generation, other heads).
  void harmless(std::initializer_list<const char*> keys) {
    for (const char* k : keys) seen_.insert(k);
  }
  /// Warns of every key not read, refused or named harmless.
  void warn_unknown(const char* model) const {
    std::vector<std::string> unknown;
    for (const auto& item : j_.items()) {
      if (!seen_.count(item.key())) unknown.push_back(text_excerpt(item.key(), 40));
    }
    if (unknown.empty()) return;
    spdlog::warn(
        "{}: {} has keys {} does not know ({}): they are ignored; if one changes the "
        "model's math, its outputs will differ from Hugging Face's",
        model, path_, model, some_names(unknown, 10));
  }
  std::string where(const char* key) const { return fmt::format("{} key {}", path_, key); }

 private:
  std::string path_, text_;
  json j_;
  std::set<std::string> seen_;
};

/// Keys every Hugging Face config may hold that change no math of a causal LM's forward.
const std::initializer_list<const char*> kCommonHarmless = {"architectures",
                                                            "model_type",
                                                            "torch_dtype",
                                                            "dtype",
                                                            "transformers_version",
                                                            "use_cache",
                                                            "_name_or_path",
                                                            "initializer_range",
                                                            "pad_token_id",
                                                            "id2label",
                                                            "label2id",
                                                            "output_attentions",
                                                            "output_hidden_states",
                                                            "return_dict",
                                                            "task_specific_params",
                                                            "gradient_checkpointing",
                                                            "problem_type",
                                                            "tokenizer_class",
                                                            "prefix",
                                                            "max_length",
                                                            "do_sample",
                                                            "temperature",
                                                            "top_p",
                                                            "top_k",
                                                            "num_beams",
                                                            "repetition_penalty",
                                                            "is_encoder_decoder",
                                                            "is_decoder",
                                                            "chunk_size_feed_forward",
                                                            "tie_encoder_decoder",
                                                            "use_bfloat16",
                                                            "finetuning_task",
                                                            "decoder_start_token_id",
                                                            "sep_token_id",
                                                            "_attn_implementation",
                                                            "attn_implementation",
                                                            "quantization_config_applied",
                                                            "torchscript",
                                                            "pruned_heads_applied",
                                                            "keys_to_ignore_at_inference"};

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
    const json& v = scaling.at(k);
    UT_CHECK(v.is_number() && v.get<double>() > min && v.get<double>() <= max, where, ".", k,
             " must be a number in (", min, ", ", max, "], got ", json_excerpt(v));
    out = v.get<double>();
  };
  num("rope_theta", c.rope_theta, 0, 1e30);
  UT_CHECK(type == "default" || type == "llama3" || type == "linear", where, " has rope_type '",
           text_excerpt(type),
           "'; llama computes default, linear and llama3 rotary embeddings "
           "(not dynamic, yarn, longrope)");
  if (type == "llama3" || type == "linear") {
    c.rope_type = type;
    UT_CHECK(scaling.contains("factor"), where, ".factor is missing (", type, " scaling needs it)");
    num("factor", c.rope_factor, 0, 1e9);
  }
  if (type == "llama3") {
    num("low_freq_factor", c.low_freq_factor, 0, 1e9);
    num("high_freq_factor", c.high_freq_factor, 0, 1e9);
    if (scaling.contains("original_max_position_embeddings")) {
      const json& v = scaling.at("original_max_position_embeddings");
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
  UT_CHECK(attention_factor == 1, where, ".attention_factor is ", attention_factor,
           "; llama computes rotary embeddings unscaled");
}

}  // namespace

std::string HfModelOptions::config_path(const std::string& p) const {
  UT_CHECK(!pretrained.empty() || !config.empty(), "give ", p,
           "pretrained (a Hugging Face "
           "folder: config.json and model.safetensors) or ",
           p,
           "config (a config.json, for a "
           "fresh model of its shape)");
  UT_CHECK(pretrained.empty() || config.empty(), p, "pretrained and ", p,
           "config are both "
           "given: the folder's config.json is the model's; keep one");
  return pretrained.empty() ? config : pretrained + "/config.json";
}

Gpt2Config read_gpt2_config(const std::string& path) {
  ConfigFile f(path, "gpt2");
  Gpt2Config c;
  c.json = f.text();
  f.integer("vocab_size", c.vocab_size, 1, kMaxVocab);
  f.integer("n_positions", c.n_positions, 1, kMaxPositions);
  f.integer("n_embd", c.n_embd, 1, kMaxWidth);
  f.integer("n_layer", c.n_layer, 1, kMaxLayers);
  f.integer("n_head", c.n_head, 1, kMaxHeads);
  f.integer("n_inner", c.n_inner, 1, kMaxInner, /*nullable=*/true);
  f.text("activation_function", c.activation_function);
  static const std::set<std::string> kActivations = {
      "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu", "relu", "silu", "swish"};
  UT_CHECK(kActivations.count(c.activation_function), f.where("activation_function"), " is '",
           text_excerpt(c.activation_function),
           "'; gpt2 computes gelu_new (tanh GELU), "
           "gelu_pytorch_tanh, gelu_fast, gelu, relu and silu");
  f.number("resid_pdrop", c.resid_pdrop, 0, 0.999);
  f.number("embd_pdrop", c.embd_pdrop, 0, 0.999);
  f.number("attn_pdrop", c.attn_pdrop, 0, 0.999);
  f.number("layer_norm_epsilon", c.layer_norm_epsilon, 0, 1, /*above_min=*/true);
  f.number("initializer_range", c.initializer_range, 0, 10);
  f.boolean("tie_word_embeddings", c.tie_word_embeddings);
  std::vector<int64_t> bos, eos;
  f.ids("bos_token_id", bos, c.vocab_size);
  f.ids("eos_token_id", eos, c.vocab_size);
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
  f.boolean("attention_bias", c.attention_bias);
  f.boolean("mlp_bias", c.mlp_bias);
  f.boolean("tie_word_embeddings", c.tie_word_embeddings);
  f.ids("bos_token_id", c.bos_token_ids, c.vocab_size);
  f.ids("eos_token_id", c.eos_token_ids, c.vocab_size);
  f.integer("pad_token_id", c.pad_token_id, 0, kMaxTokenId, /*nullable=*/true);
  std::string act = "silu";
  f.text("hidden_act", act);
  UT_CHECK(act == "silu" || act == "swish", f.where("hidden_act"), " is '", text_excerpt(act),
           "'; llama computes SwiGLU with silu");
  UT_CHECK(c.num_attention_heads % c.kv_heads() == 0, f.where("num_key_value_heads"), " (",
           c.kv_heads(), ") must divide num_attention_heads (", c.num_attention_heads, ")");
  UT_CHECK(c.head_dim > 0 || c.hidden_size % c.num_attention_heads == 0, f.where("hidden_size"),
           " (", c.hidden_size, ") must be a multiple of num_attention_heads (",
           c.num_attention_heads, ") when head_dim is not given");
  UT_CHECK(c.head_width() % 2 == 0, f.where("head_dim"),
           ": rotary embeddings need an even head "
           "width, got ",
           c.head_width());
  read_rope(f, c);
  f.refuse_unless("pretraining_tp", 1,
                  "llama computes its products whole (set it to 1: the "
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

std::string read_generation_config(const std::string& dir, int64_t vocab,
                                   const std::string& fallback) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return fallback;
  std::string text;
  const json j = read_json_object(path, &text);
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (j.contains(key) && !j.at(key).is_null()) {
      token_ids(j.at(key), fmt::format("{} key {}", path, key), vocab);
    }
  }
  return text;
}

std::string generation_config_json(const std::vector<int64_t>& bos,
                                   const std::vector<int64_t>& eos) {
  nlohmann::json j = nlohmann::json::object();
  j["_from_model_config"] = true;
  if (!bos.empty())
    j["bos_token_id"] = bos.size() == 1 ? nlohmann::json(bos[0]) : nlohmann::json(bos);
  if (!eos.empty())
    j["eos_token_id"] = eos.size() == 1 ? nlohmann::json(eos[0]) : nlohmann::json(eos);
  return j.dump(2) + "\n";
}

}  // namespace unitrain::models
