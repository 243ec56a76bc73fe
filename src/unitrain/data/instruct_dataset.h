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

/// Which tokens a cut sequence loses: `right` its last (the response's end), `left` its first
/// after the tokenizer's special prefix (the prompt's start).
enum class Truncation { Right, Left };

/// Settings of the `instruct` dataset (its `args`).
struct InstructOptions {
  std::vector<std::string> paths;
  std::string tokenizer;
  std::string prompt_key = "prompt", response_key = "response", messages_key = "messages";
  std::string template_text = "### Instruction:\n{prompt}\n\n### Response:\n";  ///< `template`
  std::string chat_template;  ///< "" = the tokenizer_config.json's, when plain text
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
/// each message's tokens through chat_template (a template with {role} and {content}), every
/// assistant message's content (and its template text after {content}) followed by eos. The
/// tokenizer's special prefix (add_special_tokens) starts each example. Trained tokens are the
/// responses' (eos included); the others are prompt. An example of n tokens gives x = ids[:-1]
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
  std::string chat_refusal_;  ///< why the tokenizer's chat template cannot run (said at a chat)
  std::vector<int64_t> prefix_;
  int64_t eos_ = -1;
  int64_t largest_id_ = -1;  ///< the largest id of any example (info's max_token_id)
  std::vector<InstructTokens> packed_examples_;  ///< pack: every line's tokens
  std::vector<std::vector<int64_t>> windows_;    ///< pack: the lines of each window
};

/// Registers dataset `instruct` in dataset_registry(); register_builtin_datasets() calls it.
void register_instruct_dataset();

}  // namespace unitrain
