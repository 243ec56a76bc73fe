#include "unitrain/models/text_generator.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "unitrain/core/error.h"
#include "unitrain/models/hf_causal_lm.h"
#include "unitrain/text/chat_template.h"
#include "unitrain/text/jinja_chat.h"

namespace unitrain {

TextGenerator::TextGenerator(std::shared_ptr<torch::nn::Module> owner, models::HfCausalLm& model,
                             std::unique_ptr<Tokenizer> tokenizer, std::vector<int64_t> stop_ids)
    : owner_(std::move(owner)),
      model_(model),
      tokenizer_(std::move(tokenizer)),
      stop_ids_(std::move(stop_ids)) {
  if (const int64_t eos = tokenizer_->eos_id(); eos >= 0) stop_ids_.push_back(eos);
  const TokenizerChatTemplate t = tokenizer_chat_template(tokenizer_->path());
  if (t.text.empty()) {
    chat_error_ = "the tokenizer " + tokenizer_->path() +
                  " has no tokenizer_config.json with a chat_template beside it";
  } else if (!is_jinja(t.text)) {
    chat_error_ = t.path +
                  ": its chat_template is plain {role}/{content} text, not the Jinja "
                  "template a chat prompt is rendered with";
  } else {
    nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
    for (const auto& [name, token] : t.special_tokens) tokens[name] = token;
    try {  // a template that cannot run fails a chat, not plain prompts
      chat_ = std::make_shared<const JinjaChat>(t.text, tokens, "the chat_template of " + t.path);
    } catch (const ConfigError& e) {
      chat_error_ = e.what();
    }
  }
}

TextGenerator::~TextGenerator() = default;
TextGenerator::TextGenerator(TextGenerator&&) noexcept = default;

std::string TextGenerator::chat_prompt(const nlohmann::ordered_json& messages) const {
  UT_CHECK(chat_ != nullptr, "generate: chat messages need a chat template: ", chat_error_);
  UT_CHECK(messages.is_array() && !messages.empty(),
           "generate: the messages are not a non-empty list of {role, content}");
  return chat_->render(messages, true, nlohmann::ordered_json::object());
}

std::vector<int64_t> TextGenerator::chat_ids(const nlohmann::ordered_json& messages) const {
  const std::vector<int> ids = tokenizer_->encode(chat_prompt(messages));
  return {ids.begin(), ids.end()};
}

std::vector<int64_t> TextGenerator::prompt_ids(const std::string& prompt) const {
  std::vector<int64_t> ids;
  if (special_tokens_) {
    for (int id : tokenizer_->special_prefix()) ids.push_back(id);
  }
  for (int id : tokenizer_->encode(prompt)) ids.push_back(id);
  return ids;
}

GeneratedText TextGenerator::generate_chat(const nlohmann::ordered_json& messages,
                                           models::GenerationOptions o,
                                           const std::vector<std::string>& stop_strings) const {
  return generate_all({chat_ids(messages)}, std::move(o), stop_strings, 1).front();
}

GeneratedText TextGenerator::generate(const std::string& prompt, models::GenerationOptions o,
                                      const std::vector<std::string>& stop_strings) const {
  return generate_all({prompt_ids(prompt)}, std::move(o), stop_strings, 1).front();
}

std::vector<GeneratedText> TextGenerator::generate_all(
    const std::vector<std::vector<int64_t>>& prompts, models::GenerationOptions o,
    const std::vector<std::string>& stop_strings, int64_t batch) const {
  UT_CHECK(batch >= 1, "generate: the batch size must be >= 1, got ", batch);
  o.stop_ids.insert(o.stop_ids.end(), stop_ids_.begin(), stop_ids_.end());
  // Where the first stop string is in the decoded text of `ids`; npos when none is.
  auto find_stop = [&](const std::vector<int64_t>& ids) {
    const std::string text = tokenizer_->decode(std::vector<int>(ids.begin(), ids.end()));
    size_t at = std::string::npos;
    for (const std::string& s : stop_strings) at = std::min(at, text.find(s));
    return at;
  };
  auto stops = [&](const std::vector<int64_t>& ids) {
    return !stop_strings.empty() && find_stop(ids) != std::string::npos;
  };
  std::vector<GeneratedText> out(prompts.size());
  for (size_t first = 0; first < prompts.size(); first += static_cast<size_t>(batch)) {
    const size_t end = std::min(prompts.size(), first + static_cast<size_t>(batch));
    const std::vector<std::vector<int64_t>> group(prompts.begin() + static_cast<long>(first),
                                                  prompts.begin() + static_cast<long>(end));
    const auto start = std::chrono::steady_clock::now();
    // One prompt alone runs unpadded (generate); several, left-padded in one batch.
    const std::vector<std::vector<int64_t>> ids =
        group.size() == 1
            ? std::vector<std::vector<int64_t>>{models::generate(model_, group[0], o, stops)}
            : models::generate_batch(model_, group, o, [&](size_t, const std::vector<int64_t>& i) {
                return stops(i);
              });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < group.size(); ++i) {
      GeneratedText& g = out[first + i];
      g.prompt_ids = group[i];
      g.ids = ids[i];
      g.seconds = seconds;
      g.completion = tokenizer_->decode(std::vector<int>(g.ids.begin(), g.ids.end()));
      const size_t at = stop_strings.empty() ? std::string::npos : find_stop(g.ids);
      if (at != std::string::npos) {
        g.completion.resize(at);
        g.stopped_by = "stop string";
      } else if (!g.ids.empty() && std::find(o.stop_ids.begin(), o.stop_ids.end(), g.ids.back()) !=
                                       o.stop_ids.end()) {
        g.stopped_by = "eos";
      } else {
        g.stopped_by = "max_new_tokens";
      }
    }
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
