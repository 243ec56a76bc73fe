#pragma once
// The `text` dataset: lines or JSON Lines of text, tokenised by a SentencePiece model or a
// Hugging Face tokenizer.json in the loader threads.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/data/dataset.h"
#include "unitrain/text/text_lines.h"
#include "unitrain/text/tokenizer.h"

namespace unitrain {

/// What an example is made for: `lm` (causal language modelling: x = ids[:-1], y = ids[1:])
/// or `sequence` (x = ids, for masked language modelling or classification inputs).
enum class TextTask { Lm, Sequence };

/// Settings of the `text` dataset (its `args`).
struct TextOptions {
  std::vector<std::string> paths;
  TextFormat format = TextFormat::Auto;
  std::string field = "text";      ///< jsonl: the key holding the text
  std::string tokenizer;           ///< a SentencePiece .model file or a tokenizer.json
  bool add_special_tokens = true;  ///< a tokenizer.json's post_processor tokens around a text
  bool add_bos = false;
  bool add_eos = false;
  std::optional<int64_t> max_length;  ///< the most tokens in x; unset = no limit
  TextTask task = TextTask::Lm;

  static void declare(Options<TextOptions>& o);
};

/// One example per non-blank line (or JSON object) of the files, tokenised on demand by get()
/// in the loader threads: nothing is encoded up front, and the texts are held in one buffer
/// (TextLines). Example i: the ids of text i between the tokenizer's special tokens (a
/// tokenizer.json's post_processor ones when add_special_tokens, e.g. Llama-3's
/// <|begin_of_text|>; then bos first when add_bos and eos last when add_eos, unless the
/// post_processor already put that id there), cut to max_length (+1 for lm) by dropping text
/// tokens from the end, the special tokens kept; then
/// `x` int64 [L] and, for lm, `y` int64 [L] shifted by one. Lengths vary: batch them with a
/// padding collate (`data.collate: {type: pad}`). info: vocab_size (the tokenizer's, added tokens
/// included), num_examples. ConfigError when built: a missing or corrupt file or tokenizer (named),
/// a bad JSON line (file, line, key), add_bos/add_eos without such a token in the tokenizer. get()
/// throws ConfigError naming the file and line when an lm example would have fewer than 2 tokens.
class TextDataset : public Dataset {
 public:
  explicit TextDataset(const TextOptions& options);

  int64_t size() const override { return lines_.size(); }
  Batch get(int64_t index) const override;
  std::map<std::string, int64_t> info() const override;

 private:
  TextLines lines_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int64_t> prefix_;  ///< the ids put before a text's (bos, a template's)
  std::vector<int64_t> suffix_;  ///< the ids put after (eos, a template's)
  int64_t max_tokens_ = 0;       ///< the most ids of an example (specials included); 0 = any
  TextTask task_;
};

/// Registers dataset `text` (its name, help, args and factory) in dataset_registry();
/// register_builtin_datasets() calls it.
void register_text_dataset();

}  // namespace unitrain
