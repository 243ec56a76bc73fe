#include "unitrain/models/hf_config_file.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/models/hf_family.h"

namespace unitrain::models {
namespace {

using nlohmann::json;

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

}  // namespace

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

ConfigFile::ConfigFile(const std::string& path, const char* model_type)
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
           find_hf_family(type) != nullptr ? type : hf_family_list(" or "),
           " for it (unitrain builds ", hf_family_list(), " from a Hugging Face folder)");
}

bool ConfigFile::given(const char* key, bool nullable) {
  seen_.insert(key);
  if (!j_.contains(key)) return false;
  if (!j_.at(key).is_null()) return true;
  UT_CHECK(nullable, where(key), " is null; give it a value or leave the key out");
  return false;
}

void ConfigFile::integer(const char* key, int64_t& out, int64_t min, int64_t max, bool nullable) {
  if (!given(key, nullable)) return;
  const json& v = j_.at(key);
  UT_CHECK(v.is_number_integer(), where(key), " must be an integer, got ", json_excerpt(v));
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= uint64_t(max) && v.get<int64_t>() >= min
                        : v.get<int64_t>() >= min && v.get<int64_t>() <= max;
  UT_CHECK(fits, where(key), " must be in [", min, ", ", max, "], got ", json_excerpt(v));
  out = v.get<int64_t>();
}

void ConfigFile::number(const char* key, double& out, double min, double max, bool above_min) {
  if (!given(key)) return;
  const json& v = j_.at(key);
  UT_CHECK(v.is_number(), where(key), " must be a number, got ", json_excerpt(v));
  const double x = v.get<double>();
  UT_CHECK((above_min ? x > min : x >= min) && x <= max, where(key), " must be in ",
           above_min ? "(" : "[", min, ", ", max, "], got ", json_excerpt(v));
  out = x;
}

void ConfigFile::boolean(const char* key, bool& out) {
  if (!given(key)) return;
  UT_CHECK(j_.at(key).is_boolean(), where(key), " must be true or false, got ",
           json_excerpt(j_.at(key)));
  out = j_.at(key).get<bool>();
}

void ConfigFile::text(const char* key, std::string& out) {
  if (!given(key)) return;
  UT_CHECK(j_.at(key).is_string(), where(key), " must be a string, got ", json_excerpt(j_.at(key)));
  out = j_.at(key).get<std::string>();
}

void ConfigFile::ids(const char* key, std::vector<int64_t>& out, int64_t vocab) {
  if (!given(key, /*nullable=*/true)) return;
  out = token_ids(j_.at(key), where(key), vocab);
}

void ConfigFile::refuse_unless(const char* key, const json& harmless, const std::string& why) {
  seen_.insert(key);
  if (!has(key) || j_.at(key) == harmless) return;
  throw ConfigError(detail::concat(where(key), " is ", json_excerpt(j_.at(key)), ": ", why));
}

void ConfigFile::harmless(std::initializer_list<const char*> keys) {
  for (const char* k : keys) seen_.insert(k);
}

void ConfigFile::warn_unknown(const char* model) const {
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

std::string ConfigFile::where(const char* key) const {
  return fmt::format("{} key {}", path_, key);
}

void ConfigFile::harmless_common() { harmless(kCommonHarmless); }

}  // namespace unitrain::models
