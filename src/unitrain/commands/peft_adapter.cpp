#include "unitrain/commands/peft_adapter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/commands/hf_export.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/log/console.h"
#include "unitrain/models/lora.h"
#include "unitrain/objective/objective_module.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "base_model.model.";
constexpr const char* kConfigFile = "adapter_config.json";
constexpr const char* kWeightsFile = "adapter_model.safetensors";
constexpr uintmax_t kMaxConfigBytes = uintmax_t(64) << 20;

/// adapter_config.json's `field` must equal `want` (model.lora.<key>'s value).
template <typename V>
void check_field(const nlohmann::json& cfg, const std::string& path, const char* field,
                 const V& want, const char* key) {
  UT_CHECK(cfg.contains(field) && cfg[field] == nlohmann::json(want), path, ": ", field, " is ",
           cfg.contains(field) ? json_excerpt(cfg[field]) : std::string("missing"), ", model.lora.",
           key, " is ", json_excerpt(nlohmann::json(want)),
           ": give model.lora the adapter's settings");
}

/// adapter_config.json's `field`, when given and not null, must be `harmless` (a value PEFT
/// reads as "not used"): what unitrain's adapters do not compute is refused by name.
void check_unused(const nlohmann::json& cfg, const std::string& path, const char* field,
                  const nlohmann::json& harmless, const char* why) {
  if (!cfg.contains(field) || cfg[field].is_null() || cfg[field] == harmless) return;
  throw ConfigError(detail::concat(path, ": ", field, " is ", json_excerpt(cfg[field]), ": ", why));
}

/// adapter_config.json's target_modules as PEFT writes them for `model`'s adapters made by
/// `lora`: its regular expression (one string), or a list: its names, or for all-linear those
/// naming the layers adapted (as PEFT resolves all-linear).
nlohmann::json target_modules_json(torch::nn::Module& model, const LoraOptions& lora) {
  if (!lora.target_pattern.empty() && !lora.all_linear()) return lora.target_pattern;
  if (!lora.all_linear()) {
    return std::set<std::string>(lora.target_modules.begin(), lora.target_modules.end());
  }
  std::vector<std::string> adapted;
  for (const auto& l : models::lora_layers(model)) adapted.push_back(l.name);
  return models::target_modules_naming(model, adapted);
}

/// adapter_config.json's target_modules must name the layers model.lora.target_modules does
/// (all-linear as the word or as the names it resolves to).
void check_targets(const nlohmann::json& cfg, const std::string& path, const LoraOptions& lora,
                   torch::nn::Module& model) {
  const nlohmann::json written = target_modules_json(model, lora);
  std::set<std::string> want;
  for (const auto& t : written.is_array() ? written : nlohmann::json::array({written})) {
    want.insert(t.get<std::string>());
  }
  const nlohmann::json& given = cfg.contains("target_modules") ? cfg["target_modules"] : nullptr;
  LoraOptions word;
  if (given.is_string()) word.target_pattern = given.get<std::string>();
  if (lora.all_linear() && word.all_linear()) return;
  std::set<std::string> got;
  bool names = given.is_array() || given.is_string();
  for (const auto& t : given.is_array() ? given : nlohmann::json::array({given})) {
    names = names && t.is_string();
    if (names) got.insert(t.get<std::string>());
  }
  UT_CHECK(names && got == want, path, ": target_modules is ",
           given.is_null() ? std::string("missing") : json_excerpt(given),
           ", model.lora.target_modules is ", json_excerpt(nlohmann::json(want)),
           ": give model.lora the adapter's settings");
}

/// adapter_config.json's modules_to_save (null or a list of names) must be model.lora's.
void check_modules_to_save(const nlohmann::json& cfg, const std::string& path,
                           const LoraOptions& lora) {
  const std::set<std::string> want(lora.modules_to_save.begin(), lora.modules_to_save.end());
  const nlohmann::json& given = cfg.contains("modules_to_save") ? cfg["modules_to_save"] : nullptr;
  std::set<std::string> got;
  bool names = given.is_null() || given.is_array();
  for (const auto& t : given.is_array() ? given : nlohmann::json::array()) {
    names = names && t.is_string();
    if (names) got.insert(t.get<std::string>());
  }
  UT_CHECK(names && got == want, path, ": modules_to_save is ", json_excerpt(given),
           ", model.lora.modules_to_save is ", json_excerpt(nlohmann::json(want)),
           ": give model.lora the adapter's settings");
}

/// The adapter's settings that must be the run's (or that unitrain does not compute).
void check_adapter_config(const nlohmann::json& cfg, const std::string& path,
                          const LoraOptions& lora, torch::nn::Module& model) {
  UT_CHECK(cfg.value("peft_type", nlohmann::json()) == "LORA", path, ": peft_type ",
           cfg.contains("peft_type") ? json_excerpt(cfg["peft_type"]) : std::string("missing"),
           ": model.init_from with model.lora takes a LoRA adapter (peft_type \"LORA\")");
  check_field(cfg, path, "r", lora.r, "r");
  UT_CHECK(cfg.contains("lora_alpha") && cfg["lora_alpha"].is_number() &&
               cfg["lora_alpha"].get<double>() == lora.alpha,
           path, ": lora_alpha is ",
           cfg.contains("lora_alpha") ? json_excerpt(cfg["lora_alpha"]) : std::string("missing"),
           ", model.lora.alpha is ", lora.alpha, ": give model.lora the adapter's settings");
  check_field(cfg, path, "use_rslora", lora.rslora, "rslora");
  check_targets(cfg, path, lora, model);
  check_modules_to_save(cfg, path, lora);
  check_unused(cfg, path, "bias", "none",
               "unitrain's adapters train no biases (PEFT's bias \"none\")");
  check_unused(cfg, path, "use_dora", false, "unitrain's adapters are LoRA's, not DoRA's");
  check_unused(cfg, path, "layers_to_transform", nlohmann::json::array(),
               "unitrain puts adapters on every layer target_modules names");
  check_unused(cfg, path, "rank_pattern", nlohmann::json::object(),
               "unitrain's adapters all have rank r (model.lora.r)");
  check_unused(cfg, path, "alpha_pattern", nlohmann::json::object(),
               "unitrain's adapters all have lora_alpha (model.lora.alpha)");
}

/// Floating-point adapters of another precision (F16 or BF16 for an fp32 model) converted to
/// the module's, as the base weights are; how many.
size_t convert_precision(NamedTensors& tensors, const torch::nn::Module& module) {
  std::map<std::string, torch::Tensor> own;
  for (const auto& p : module.named_parameters(true)) own.emplace(p.key(), p.value());
  size_t converted = 0;
  for (auto& [name, t] : tensors) {
    const auto it = own.find(name);
    if (it != own.end() && t.scalar_type() != it->second.scalar_type() && t.is_floating_point() &&
        it->second.is_floating_point() && t.sizes().equals(it->second.sizes())) {
      t = t.to(it->second.scalar_type());
      ++converted;
    }
  }
  return converted;
}

/// lora_alpha as PEFT's config holds what users give it: 16, not 16.0, when whole.
nlohmann::json alpha_json(double alpha) {
  if (alpha == std::floor(alpha) && std::abs(alpha) < 1e15) return static_cast<int64_t>(alpha);
  return alpha;
}

}  // namespace

bool is_peft_adapter_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / kConfigFile, ec);
}

void load_peft_adapter(ObjectiveModule& module, const LoraOptions& lora, const std::string& dir,
                       const std::string& key) {
  const std::string config_path = (fs::path(dir) / kConfigFile).string();
  std::error_code ec;
  const uintmax_t size = fs::file_size(config_path, ec);
  UT_CHECK(ec || size <= kMaxConfigBytes, config_path, ": ", size, " bytes, more than an ",
           kConfigFile, " holds (", key, ")");
  const std::string text = read_file_bytes(config_path, key);
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(detail::concat(config_path, ": not JSON (", key, "): ", json_error_text(e)));
  }
  UT_CHECK(cfg.is_object(), config_path, ": not a JSON object (", key, ")");
  check_adapter_config(cfg, config_path, lora, module.weights());
  const std::string weights = (fs::path(dir) / kWeightsFile).string();
  NamedTensors renamed;
  for (auto& [name, t] : read_safetensors(weights, key).tensors) {
    UT_CHECK(name.rfind(kPrefix, 0) == 0, weights, ": tensor ", text_excerpt(name),
             " is not named ", kPrefix, "<layer>.lora_A/B.weight as PEFT names adapters");
    renamed.emplace_back(name.substr(std::string(kPrefix).size()), std::move(t));
  }
  const size_t count = renamed.size();
  torch::nn::Module& weights_module = module.weights();
  tp::cut_whole(weights_module, renamed);  // a model cut over a tensor group takes its parts
  const size_t converted = convert_precision(renamed, weights_module);
  load_module_state(weights_module, with_frozen_parameters(weights_module, std::move(renamed)),
                    /*strict=*/true, key + " " + weights, "");
  log::info(fmt::format("{} {}: {} adapter tensors loaded{}", key, dir, count,
                        converted > 0
                            ? fmt::format(" ({} converted to the model's precision)", converted)
                            : std::string()));
}

namespace {

/// adapter_config.json's fields as PEFT writes them for `lora` over base folder `base`.
nlohmann::json adapter_config_json(torch::nn::Module& model, const LoraOptions& lora,
                                   const std::string& base, bool fan_in_fan_out,
                                   bool saves_modules) {
  return {{"peft_type", "LORA"},
          {"task_type", "CAUSAL_LM"},
          {"base_model_name_or_path",
           base.empty() ? "" : fs::absolute(base).lexically_normal().string()},
          {"r", lora.r},
          {"lora_alpha", alpha_json(lora.alpha)},
          {"lora_dropout", lora.dropout},
          {"target_modules", target_modules_json(model, lora)},
          {"fan_in_fan_out", fan_in_fan_out},
          {"bias", "none"},
          {"use_rslora", lora.rslora},
          {"use_dora", false},
          {"modules_to_save",
           saves_modules ? nlohmann::json(lora.modules_to_save) : nlohmann::json(nullptr)},
          {"init_lora_weights", true},
          {"inference_mode", true},
          {"layers_to_transform", nullptr},
          {"layers_pattern", nullptr},
          {"rank_pattern", nlohmann::json::object()},
          {"alpha_pattern", nlohmann::json::object()},
          {"revision", nullptr}};
}

}  // namespace

void write_peft_folder(ObjectiveModule& module, const LoraOptions& lora, const std::string& base,
                       const std::string& out, const Config& config,
                       const std::string& model_card) {
  torch::nn::Module& model = module.weights();
  const std::vector<models::LoraLayer> layers = models::lora_layers(model);
  UT_CHECK(!layers.empty(), "export: the run's model has no LoRA adapters (model.lora)");
  NamedTensors tensors;
  bool fan_in_fan_out = false;
  for (const auto& l : layers) {
    const auto params = l.layer->named_parameters();
    for (const std::string part : {"lora_A", "lora_B"}) {
      const torch::Tensor& w = params[part + ".weight"];
      tensors.emplace_back(kPrefix + l.name + "." + part + ".weight",
                           w.detach().to(torch::kCPU).contiguous());
    }
    fan_in_fan_out = fan_in_fan_out || l.fan_in_fan_out;
  }
  // Modules trained in full: PEFT's names drop its wrapper's "modules_to_save.default.".
  const auto modules = model.named_modules("", /*include_self=*/false);
  const std::vector<std::string> saved = models::lora_modules_to_save(model, lora);
  for (const std::string& name : saved) {
    for (const auto& p : modules[name]->named_parameters()) {
      tensors.emplace_back(kPrefix + name + "." + p.key(),
                           p.value().detach().to(torch::kCPU).contiguous());
    }
  }
  const nlohmann::json cfg = adapter_config_json(model, lora, base, fan_in_fan_out, !saved.empty());
  std::vector<std::string> files{kConfigFile, kWeightsFile};
  write_new_folder(out, [&](const std::string& dir) {
    write_file_atomic((fs::path(dir) / kConfigFile).string(), cfg.dump(2) + "\n");
    write_safetensors((fs::path(dir) / kWeightsFile).string(), tensors, {{"format", "pt"}});
    for (std::string& f : copy_tokenizer_files(base, config, dir)) files.push_back(std::move(f));
    if (model_card.empty()) return;
    write_file_atomic((fs::path(dir) / "README.md").string(), model_card);
    files.push_back("README.md");
  });
  log::info(fmt::format(
      "{}: {} ({} tensors: adapters on {} layers{}; PEFT's PeftModel.from_pretrained reads it "
      "over its base model)",
      out, fmt::join(files, ", "), tensors.size(), layers.size(),
      saved.empty() ? "" : fmt::format(", {} trained in full", fmt::join(saved, ", "))));
}

}  // namespace unitrain
