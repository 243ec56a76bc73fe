#pragma once
// TextGenerator: text in, text out — a causal LM (Model::generation_model) with its tokenizer,
// generating after each prompt (models/generation.h). commands/generate.h opens one from a run's
// checkpoint or a Hugging Face folder.
#include <torch/nn/module.h>

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "unitrain/models/generation.h"
#include "unitrain/text/tokenizer.h"

namespace unitrain {

namespace models {
class HfCausalLm;
}
class JinjaChat;

/// What one prompt gave.
struct GeneratedText {
  std::string completion;           ///< the new tokens' text, cut before a stop string
  std::vector<int64_t> prompt_ids;  ///< the prompt's tokens (special prefix included)
  std::vector<int64_t> ids;         ///< the new tokens
  std::string stopped_by;           ///< "eos", "stop string", or "max_new_tokens"
  double seconds = 0;  ///< the generation's wall time (prompt and new tokens; its batch's)
};

/// A causal LM ready to generate, with its tokenizer. Holds what owns the model.
class TextGenerator {
 public:
  /// `model` must stay owned by `owner`. Stop ids: `stop_ids` (the model's eos ids) and the
  /// tokenizer's eos.
  TextGenerator(std::shared_ptr<torch::nn::Module> owner, models::HfCausalLm& model,
                std::unique_ptr<Tokenizer> tokenizer, std::vector<int64_t> stop_ids);
  ~TextGenerator();
  TextGenerator(TextGenerator&&) noexcept;

  /// The prompt's tokens (the tokenizer's special prefix, as transformers' tokenizer(text)
  /// and the instruct dataset's add_special_tokens put it, unless add_special_tokens(false);
  /// then `prompt`'s), then generation; the completion ends at the first of `stop_strings` in
  /// its text (that string dropped).
  GeneratedText generate(const std::string& prompt, models::GenerationOptions options,
                         const std::vector<std::string>& stop_strings = {}) const;
  /// A chat's reply: `messages` (a JSON list of {role, content}) rendered through the chat
  /// template of the tokenizer_config.json beside the tokenizer with the generation prompt, as
  /// transformers' apply_chat_template(messages, add_generation_prompt=True) renders it (the
  /// template writes bos: no special prefix is added), then generate(). ConfigError when the
  /// folder has no chat template, or it raises (its message and line).
  GeneratedText generate_chat(const nlohmann::ordered_json& messages,
                              models::GenerationOptions options,
                              const std::vector<std::string>& stop_strings = {}) const;
  /// The text generate_chat() generates after.
  std::string chat_prompt(const nlohmann::ordered_json& messages) const;
  /// The tokens generate() and generate_chat() generate after.
  std::vector<int64_t> prompt_ids(const std::string& prompt) const;
  std::vector<int64_t> chat_ids(const nlohmann::ordered_json& messages) const;
  /// Each prompt's generation (prompt_ids() or chat_ids() gives them), `batch` prompts at a
  /// time: one alone runs as it is, several in one batch padded on the left
  /// (models::generate_batch: each row's tokens those it gives alone). A text's `seconds` is
  /// its batch's.
  std::vector<GeneratedText> generate_all(const std::vector<std::vector<int64_t>>& prompts,
                                          models::GenerationOptions options,
                                          const std::vector<std::string>& stop_strings,
                                          int64_t batch) const;
  /// Whether prompts start with the tokenizer's special prefix (e.g. Llama-3's
  /// <|begin_of_text|>); on by default.
  TextGenerator& add_special_tokens(bool on) {
    special_tokens_ = on;
    return *this;
  }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// The text a prompt is put into, with {prompt}: a run's train set's template when it was
  /// opened from a run (RunText::prompt_template), else "{prompt}".
  const std::string& prompt_template() const { return template_; }
  TextGenerator& prompt_template(std::string text) {
    template_ = std::move(text);
    return *this;
  }

 private:
  std::shared_ptr<torch::nn::Module> owner_;
  models::HfCausalLm& model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int64_t> stop_ids_;
  bool special_tokens_ = true;
  std::string template_ = "{prompt}";
  std::shared_ptr<const JinjaChat> chat_;  ///< the tokenizer folder's chat template, read once
  std::string chat_error_;                 ///< why there is none
};

/// The eos ids of a generation_config.json's text (eos_token_id: an id or a list); none when
/// absent or null.
std::vector<int64_t> generation_eos_ids(const std::string& generation_config_json);

}  // namespace unitrain
