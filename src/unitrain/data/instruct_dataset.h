#pragma once
// The `instruct` dataset: JSON Lines of {prompt, response} or chat `messages`, through a template,
// with labels on the response tokens only; optionally packed into windows.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"
#include "unitrain/text/text_lines.h"
#include "unitrain/text/tokenizer.h"

namespace unitrain {

class TextTemplate;
class JinjaChat;

/// Which tokens a cut sequence loses: `right` its last (the response's end), `left` its first
/// after the tokenizer's special prefix (the prompt's start).
enum class Truncation { Right, Left };

/// Which assistant turns of a chat a Jinja chat template's line trains: all, or the last alone
/// (for templates whose earlier turns cannot be found: InstructDataset says when).
enum class ChatLoss { All, Last };

/// Settings of the `instruct` dataset (its `args`).
struct InstructOptions {
  std::vector<std::string> paths;
  std::string tokenizer;
  std::string prompt_key = "prompt", response_key = "response", messages_key = "messages";
  std::string template_text = "### Instruction:\n{prompt}\n\n### Response:\n";  ///< `template`
  std::string chat_template;                 ///< "" = the tokenizer_config.json's (Jinja or plain)
  std::optional<Config> chat_template_vars;  ///< what a Jinja template reads besides the chat
  ChatLoss chat_loss = ChatLoss::All;
  bool add_special_tokens = true;
  bool add_eos = true;
  std::optional<int64_t> max_length;
  Truncation truncation = Truncation::Right;
  bool pack = false;
  int64_t ignore_index = -100;

  static void declare(Options<InstructOptions>& o);
};

/// One token sequence of an example and, per token, whether the loss is on it.
struct InstructTokens {
  std::vector<int64_t> ids;
  std::vector<uint8_t> trained;
};

/// Instruction examples for supervised fine-tuning. Each line of the files is a JSON object,
/// either {prompt, response} (keys prompt_key, response_key): the tokens of `template` with
/// {prompt} filled, then the response's tokens and eos; or {messages: [{role, content}, ...]}:
/// with a plain chat_template ({role} and {content}), each message's tokens through it, every
/// assistant message's content (and its template text after {content}) followed by eos; with a
/// Jinja one (the hub's), the conversation rendered as transformers' apply_chat_template
/// renders it (the line's tools and documents passed too) and tokenized whole, its assistant
/// turns trained (text/jinja_chat.h finds them): the template writes bos and each turn's end,
/// so add_special_tokens and add_eos do not apply to such lines. Otherwise the tokenizer's
/// special prefix (add_special_tokens) starts each example. Trained tokens are the responses'
/// (eos included); the others are prompt. A token that holds part of a trained turn's text is
/// trained (as transformers' assistant mask). An example of n tokens gives x = ids[:-1]
/// and y = ids[1:], with y = ignore_index where the token predicted is prompt: the loss counts
/// response tokens only. Cut to max_length + 1 tokens from `truncation`'s side.
/// With pack, examples are laid in windows of at most max_length tokens in file order (first
/// fit of the next examples), and each window adds `segments` int64 [L]: 1 on its first
/// example's tokens, 2 on the second's, ... (models/token_layout.h: a model given them keeps
/// attention inside each example and restarts positions). The pieces are tokenised one by one
/// (template text, then content), as TRL's prompt-completion data: a merge across a boundary is
/// not made. ConfigError when built: a line that is neither shape (file, line, key), a chat
/// line without a chat template (naming the tokenizer's Jinja one), a template field unknown,
/// add_eos without an eos token, pack without max_length.
class InstructDataset : public Dataset {
 public:
  explicit InstructDataset(const InstructOptions& options);
  ~InstructDataset() override;

  int64_t size() const override;
  Batch get(int64_t index) const override;
  std::map<std::string, int64_t> info() const override;
  /// Line `index`'s tokens and what is trained, cut to max_length + 1.
  InstructTokens tokens(int64_t line) const;

 private:
  InstructTokens render(int64_t line) const;
  /// A chat line's messages into `t` (`j`: the line, `where`: its file and line).
  void render_chat(InstructTokens& t, const nlohmann::json& j, const std::string& where) const;
  /// A chat line through the Jinja template (`line`: its text).
  InstructTokens render_jinja(std::string_view line, const std::string& where) const;
  /// eos after a response, trained (not twice).
  void end_response(InstructTokens& t) const;
  void add(InstructTokens& out, const std::string& text, bool trained) const;
  void cut(InstructTokens& t) const;
  /// One warning: how many examples max_length cut, from which side, how many have no label.
  void warn_truncated(int64_t truncated, int64_t without_labels) const;
  void pack_windows();

  InstructOptions o_;
  TextLines lines_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<TextTemplate> prompt_template_, chat_template_;
  std::unique_ptr<JinjaChat> jinja_;  ///< a Jinja chat template (chat_template_ is then null)
  std::vector<int64_t> prefix_;
  int64_t eos_ = -1;
  int64_t largest_id_ = -1;  ///< the largest id of any example (info's max_token_id)
  std::vector<InstructTokens> packed_examples_;  ///< pack: every line's tokens
  std::vector<std::vector<int64_t>> windows_;    ///< pack: the lines of each window
};

/// Registers dataset `instruct` in dataset_registry(); register_builtin_datasets() calls it.
void register_instruct_dataset();

}  // namespace unitrain
