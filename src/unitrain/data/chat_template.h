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

/// The chat_template of the tokenizer_config.json beside `tokenizer` when it is plain text with
/// {role} and {content}; "" when there is no such file or it has no chat_template. ConfigError
/// naming the file when its chat_template is Jinja (it cannot run here) or not a string.
std::string tokenizer_chat_template(const std::string& tokenizer);

}  // namespace unitrain
