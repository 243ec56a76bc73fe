#pragma once
// A Jinja chat template run as transformers' apply_chat_template runs it, and the assistant's
// turns found in the text it renders: from its {% generation %} marks, or by rendering prefixes
// of the conversation as TRL does.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace unitrain {

namespace jinja {
class Template;
}

/// A chat template with the variables transformers passes it besides the conversation. const
/// methods may run on many threads at once.
class JinjaChat {
 public:
  /// `variables`: a JSON object (the tokenizer's special tokens, then the user's own variables,
  /// e.g. enable_thinking). strftime_now formats `now` (seconds since the epoch, local time)
  /// when given, else the clock's time. JinjaError naming `what` and the line for a syntax error.
  JinjaChat(const std::string& source, const nlohmann::ordered_json& variables,
            const std::string& what, std::optional<int64_t> now = std::nullopt);
  ~JinjaChat();

  /// apply_chat_template(messages, add_generation_prompt=..., tokenize=False): `messages` a
  /// JSON list; `extra` (an object: tools, documents, ... of the example) added to the
  /// variables. JinjaError when the template raises or reads what it cannot.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra) const;

  struct Turns {
    std::string text;  ///< the conversation rendered without the generation prompt
    std::vector<std::pair<size_t, size_t>> assistant;  ///< byte ranges of the trained turns
  };
  /// The conversation rendered and the byte range of each assistant turn in it (or the last
  /// one alone, `last_only`). With {% generation %} marks, what they mark. Without, as TRL
  /// does: turn i is what render(messages[:i+1]) adds to render(messages[:i],
  /// add_generation_prompt=True), both being prefixes of the whole; a template that renders
  /// the same with and without add_generation_prompt (Llama 3's first: it always ends with the
  /// assistant's header) has that constant tail left out. ConfigError naming `where`, the turn
  /// and why when a turn cannot be found so (a template that renders an earlier turn otherwise
  /// once a later one follows: Qwen3's thinking, Mistral's system text in the last user turn).
  Turns assistant_turns(const nlohmann::ordered_json& messages, bool last_only,
                        const nlohmann::ordered_json& extra, const std::string& where) const;

  bool marks_generation() const;
  /// Whether the template calls strftime_now (its text then holds the day it renders).
  bool reads_clock() const;

 private:
  std::unique_ptr<jinja::Template> template_;
  std::unique_ptr<nlohmann::ordered_json> variables_;
  std::optional<int64_t> now_;
};

}  // namespace unitrain
