#include "unitrain/engine/peft_adapter.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "unitrain/checkpoint/frozen_weights.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/atomic_file.h"
#include "unitrain/core/error.h"
#include "unitrain/data/file_bytes.h"
#include "unitrain/engine/hf_export.h"
#include "unitrain/log/console.h"
#include "unitrain/models/lora.h"
#include "unitrain/objective/objective_module.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "base_model.model.";
constexpr const char* kConfigFile = "adapter_config.json";
constexpr const char* kWeightsFile = "adapter_model.safetensors";

/// adapter_config.json's `field` must equal `want` (model.lora.<key>'s value).
template <typename V>
void check_field(const nlohmann::json& cfg, const std::string& path, const char* field,
                 const V& want, const char* key) {
  UT_CHECK(cfg.contains(field) && cfg[field] == nlohmann::json(want), path, ": ", field, " is ",
           cfg.contains(field) ? cfg[field].dump() : std::string("missing"), ", model.lora.", key,
           " is ", nlohmann::json(want).dump(), ": give model.lora the adapter's settings");
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
  const std::string text = read_file_bytes(config_path, key);
  nlohmann::json cfg = nlohmann::json::parse(text, nullptr, false);
  UT_CHECK(cfg.is_object(), config_path, ": not a JSON object (", key, ")");
  UT_CHECK(cfg.value("peft_type", "") == "LORA", config_path, ": peft_type ",
           cfg.contains("peft_type") ? cfg["peft_type"].dump() : std::string("missing"),
           ": model.init_from with model.lora takes a LoRA adapter (peft_type \"LORA\")");
  check_field(cfg, config_path, "r", lora.r, "r");
  UT_CHECK(cfg.contains("lora_alpha") && cfg["lora_alpha"].is_number() &&
               cfg["lora_alpha"].get<double>() == lora.alpha,
           config_path, ": lora_alpha is ", cfg.value("lora_alpha", nlohmann::json()).dump(),
           ", model.lora.alpha is ", lora.alpha, ": give model.lora the adapter's settings");
  check_field(cfg, config_path, "use_rslora", lora.rslora, "rslora");
  const std::string weights = (fs::path(dir) / kWeightsFile).string();
  NamedTensors renamed;
  for (auto& [name, t] : read_safetensors(weights, key).tensors) {
    UT_CHECK(name.rfind(kPrefix, 0) == 0, weights, ": tensor ", name, " is not named ", kPrefix,
             "<layer>.lora_A/B.weight as PEFT names adapters");
    renamed.emplace_back(name.substr(std::string(kPrefix).size()), std::move(t));
  }
  const size_t count = renamed.size();
  torch::nn::Module& weights_module = module.weights();
  load_module_state(weights_module, with_frozen_parameters(weights_module, std::move(renamed)),
                    /*strict=*/true, key + " " + weights, "");
  log::info(fmt::format("{} {}: {} adapter tensors loaded", key, dir, count));
}

void write_peft_folder(ObjectiveModule& module, const LoraOptions& lora, const std::string& base,
                       const std::string& out) {
  const std::vector<models::LoraLayer> layers = models::lora_layers(module.weights());
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
  const std::set<std::string> targets(lora.target_modules.begin(), lora.target_modules.end());
  const nlohmann::json cfg = {{"peft_type", "LORA"},
                              {"task_type", "CAUSAL_LM"},
                              {"base_model_name_or_path",
                               base.empty() ? "" : fs::absolute(base).lexically_normal().string()},
                              {"r", lora.r},
                              {"lora_alpha", alpha_json(lora.alpha)},
                              {"lora_dropout", lora.dropout},
                              {"target_modules", targets},
                              {"fan_in_fan_out", fan_in_fan_out},
                              {"bias", "none"},
                              {"use_rslora", lora.rslora},
                              {"use_dora", false},
                              {"modules_to_save", nullptr},
                              {"init_lora_weights", true},
                              {"inference_mode", true},
                              {"layers_to_transform", nullptr},
                              {"layers_pattern", nullptr},
                              {"rank_pattern", nlohmann::json::object()},
                              {"alpha_pattern", nlohmann::json::object()},
                              {"revision", nullptr}};
  write_new_folder(out, [&](const std::string& dir) {
    write_file_atomic((fs::path(dir) / kConfigFile).string(), cfg.dump(2) + "\n");
    write_safetensors((fs::path(dir) / kWeightsFile).string(), tensors, {{"format", "pt"}});
  });
  log::info(
      fmt::format("{}: {}, {} ({} adapter tensors on {} layers; PEFT's "
                  "PeftModel.from_pretrained reads it over its base model)",
                  out, kConfigFile, kWeightsFile, tensors.size(), layers.size()));
}

}  // namespace unitrain
