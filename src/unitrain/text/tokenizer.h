#pragma once
// What the text dataset and `unitrain tokenizer` need of a tokenizer, whichever file it comes
// from: a SentencePiece .model or a Hugging Face tokenizer.json.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain {

/// A loaded tokenizer. Every method is const and safe to call from many threads at once (the
/// data loader's). Ids are -1 where the tokenizer has no such token.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// The ids of `text`, without the special tokens the tokenizer's post-processing adds around
  /// a text (those are special_prefix() and special_suffix()). Invalid UTF-8 reads as U+FFFD.
  virtual std::vector<int> encode(std::string_view text) const = 0;
  /// The ids a tokenizer.json's post_processor puts before and after one text's ids
  /// (Llama-3's <|begin_of_text|>; BERT's [CLS] and [SEP]). Empty for SentencePiece.
  virtual const std::vector<int>& special_prefix() const { return none_; }
  virtual const std::vector<int>& special_suffix() const { return none_; }
  /// The text of `ids`, special tokens included. ConfigError naming an id out of range.
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  /// The vocabulary's token of `id` (SentencePiece's piece); ConfigError when out of range.
  virtual std::string id_to_token(int64_t id) const = 0;
  /// Every id is below it (added tokens included).
  virtual int64_t vocab_size() const = 0;
  virtual int64_t bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  virtual int64_t pad_id() const = 0;
  virtual int64_t unk_id() const = 0;
  /// The file it was loaded from.
  virtual const std::string& path() const = 0;

 private:
  inline static const std::vector<int> none_{};
};

/// The tokenizer in `path`: a Hugging Face tokenizer.json when the name ends in .json or the
/// file starts with '{', a SentencePiece model otherwise. ConfigError naming the file when it
/// is missing or not what it claims to be.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

}  // namespace unitrain
