#include "unitrain/models/hf_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/models/hf_config_file.h"

namespace unitrain::models {

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

std::string read_generation_config(const std::string& dir, int64_t vocab,
                                   const std::string& fallback) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return fallback;
  std::string text;
  const nlohmann::json j = read_json_object(path, &text);
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
