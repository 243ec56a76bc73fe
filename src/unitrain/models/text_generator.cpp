#include "unitrain/models/text_generator.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "unitrain/models/hf_causal_lm.h"

namespace unitrain {

TextGenerator::TextGenerator(std::shared_ptr<torch::nn::Module> owner, models::HfCausalLm& model,
                             std::unique_ptr<Tokenizer> tokenizer, std::vector<int64_t> stop_ids)
    : owner_(std::move(owner)),
      model_(model),
      tokenizer_(std::move(tokenizer)),
      stop_ids_(std::move(stop_ids)) {
  if (const int64_t eos = tokenizer_->eos_id(); eos >= 0) stop_ids_.push_back(eos);
}

TextGenerator::~TextGenerator() = default;
TextGenerator::TextGenerator(TextGenerator&&) noexcept = default;

GeneratedText TextGenerator::generate(const std::string& prompt, models::GenerationOptions o,
                                      const std::vector<std::string>& stop_strings) const {
  GeneratedText out;
  if (special_tokens_) {
    for (int id : tokenizer_->special_prefix()) out.prompt_ids.push_back(id);
  }
  for (int id : tokenizer_->encode(prompt)) out.prompt_ids.push_back(id);
  o.stop_ids.insert(o.stop_ids.end(), stop_ids_.begin(), stop_ids_.end());
  // The first stop string in the decoded text so far, and where.
  auto find_stop = [&](const std::vector<int64_t>& ids, size_t& at) {
    const std::string text = tokenizer_->decode(std::vector<int>(ids.begin(), ids.end()));
    at = std::string::npos;
    for (const std::string& s : stop_strings) at = std::min(at, text.find(s));
    return at != std::string::npos;
  };
  size_t at = std::string::npos;
  const auto start = std::chrono::steady_clock::now();
  out.ids = models::generate(model_, out.prompt_ids, o, [&](const std::vector<int64_t>& ids) {
    return !stop_strings.empty() && find_stop(ids, at);
  });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.completion = tokenizer_->decode(std::vector<int>(out.ids.begin(), out.ids.end()));
  if (!stop_strings.empty() && find_stop(out.ids, at)) {
    out.completion.resize(at);
    out.stopped_by = "stop string";
  } else if (!out.ids.empty() &&
             std::find(o.stop_ids.begin(), o.stop_ids.end(), out.ids.back()) != o.stop_ids.end()) {
    out.stopped_by = "eos";
  } else {
    out.stopped_by = "max_new_tokens";
  }
  return out;
}

std::vector<int64_t> generation_eos_ids(const std::string& generation_config_json) {
  const nlohmann::json j = nlohmann::json::parse(generation_config_json, nullptr, false);
  std::vector<int64_t> ids;
  if (!j.is_object() || !j.contains("eos_token_id")) return ids;
  const nlohmann::json& e = j["eos_token_id"];
  if (e.is_number_integer()) ids.push_back(e.get<int64_t>());
  if (e.is_array()) {
    for (const auto& id : e) {
      if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
    }
  }
  return ids;
}

}  // namespace unitrain
