#pragma once
// A Hugging Face tokenizer.json (the `tokenizers` library's format), read and run in C++.
#include <memory>

#include "unitrain/text/tokenizer.h"

namespace unitrain {

/// A tokenizer.json: normalizer, pre_tokenizer, model (BPE, Unigram, WordPiece, WordLevel),
/// post_processor, decoder and added tokens, as Hugging Face's `tokenizers` runs them. Added
/// tokens are found in the text first (the raw text, or the normalized text for those marked
/// normalized) and the text between them goes through the normalizer, pre-tokenizer and model.
/// Any component type it does not implement is a ConfigError naming the file, the JSON path and
/// the type, never ignored. The file's truncation and padding settings are not applied (as
/// transformers does not unless asked); padding.pad_id names pad_id(). OpenAI's GPT-2 files
/// read too: an `encoder.json` (token -> id: no "model" object) with its `vocab.bpe` beside it is
/// read as the tokenizer.json Hugging Face's gpt2 has.
///
/// bos_id, eos_id and pad_id come from the tokenizer_config.json beside the file when there is
/// one (its bos_token, eos_token, pad_token), else from the post_processor's template (its first
/// and last special tokens around $A), else from added special tokens with the usual names
/// (<s> </s> <|begin_of_text|> <|end_of_text|> <|endoftext|> [CLS] [SEP] <pad> [PAD] ...).
///
/// encode() is const and thread-safe: each thread keeps its own bounded cache of the ids of
/// the words it has seen.
class HfTokenizer : public Tokenizer {
 public:
  explicit HfTokenizer(const std::string& path);
  ~HfTokenizer() override;
  HfTokenizer(const HfTokenizer&) = delete;
  HfTokenizer& operator=(const HfTokenizer&) = delete;

  std::vector<int> encode(std::string_view text) const override;
  /// As Hugging Face's Tokenizer.encode(text, add_special_tokens): with the post_processor's
  /// special tokens when `add_special_tokens`.
  std::vector<int> encode(std::string_view text, bool add_special_tokens) const;
  /// A pair of texts through the post_processor's pair template (BERT: [CLS] A [SEP] B [SEP]).
  std::vector<int> encode_pair(std::string_view first, std::string_view second,
                               bool add_special_tokens = true) const;
  const std::vector<int>& special_prefix() const override;
  const std::vector<int>& special_suffix() const override;
  std::string decode(const std::vector<int>& ids) const override;
  /// As Hugging Face's decode(ids, skip_special_tokens).
  std::string decode(const std::vector<int>& ids, bool skip_special_tokens) const;
  std::string id_to_token(int64_t id) const override;
  /// The id of a token of the vocabulary or the added tokens; -1 when there is none.
  int64_t token_to_id(const std::string& token) const;
  int64_t vocab_size() const override;
  int64_t bos_id() const override;
  int64_t eos_id() const override;
  int64_t pad_id() const override;
  int64_t unk_id() const override;
  const std::string& path() const override;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace unitrain
