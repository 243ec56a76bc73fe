#pragma once
// Plain-text templates of the instruct dataset: `{prompt}` for instruction records, `{role}` and
// `{content}` for each message of a chat. Jinja (Hugging Face's chat_template) is refused by name.
#include <map>
#include <string>
#include <vector>

namespace unitrain {

/// Text with fields `{name}` from a fixed set. Parsed once: ConfigError naming `what` (the
/// config key or file) and the template for a field not in the set, a brace that opens no
/// field, a Jinja statement, expression or comment (`{%`, `{{`, `{#`), or a field `required`
/// that is missing or given twice.
class TextTemplate {
 public:
  TextTemplate(const std::string& text, const std::vector<std::string>& fields,
               const std::string& required, const std::string& what);
  /// The text before the required field and the text after it, with the other fields filled
  /// from `values` (a field without a value reads as empty).
  std::pair<std::string, std::string> around(
      const std::map<std::string, std::string>& values) const;

 private:
  struct Piece {
    std::string text;
    bool field = false;  ///< `text` names a field
  };
  std::string fill(const std::vector<Piece>& pieces,
                   const std::map<std::string, std::string>& values) const;
  std::vector<Piece> before_, after_;
};

/// The chat_template of the tokenizer_config.json beside a tokenizer.
struct TokenizerChatTemplate {
  std::string text;     ///< plain text with {role} and {content}; "" when there is none to use
  std::string refusal;  ///< why the file's template cannot run (Jinja, a list of named ones)
};

/// Reads the chat_template of the tokenizer_config.json beside `tokenizer`: both fields empty
/// when there is no such file or it has no chat_template; `refusal` set (naming the file, with a
/// plain template to give instead) when it is one unitrain cannot run, so that a caller says it
/// only when a chat needs it. ConfigError naming the file when it is not JSON, too large, or its
/// chat_template is neither a string nor a list.
TokenizerChatTemplate tokenizer_chat_template(const std::string& tokenizer);

}  // namespace unitrain
