#pragma once
// Plain-text templates of the instruct dataset: `{prompt}` for instruction records, `{role}` and
// `{content}` for each message of a chat; and the chat template a tokenizer folder carries
// (tokenizer_config.json's, Jinja as a rule: text/jinja_chat.h runs it).
#include <map>
#include <string>
#include <utility>
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

/// Whether `text` holds Jinja (`{%`, `{{` or `{#`) rather than plain {role}/{content} fields.
bool is_jinja(const std::string& text);

/// The chat_template of the tokenizer_config.json beside a tokenizer, and the special tokens
/// transformers passes to it (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
/// mask_token: those the file sets, as their text).
struct TokenizerChatTemplate {
  std::string text;  ///< the template (Jinja or plain); "" when the file has none
  std::string path;  ///< the tokenizer_config.json ("" when there is none)
  std::vector<std::pair<std::string, std::string>> special_tokens;
};

/// Reads the tokenizer_config.json beside `tokenizer`: all empty when there is no such file.
/// A list of named templates gives the one named "default", as transformers picks it.
/// ConfigError naming the file when it is not JSON, too large, its chat_template is neither a
/// string nor such a list, or the list has no "default".
TokenizerChatTemplate tokenizer_chat_template(const std::string& tokenizer);

}  // namespace unitrain
