#pragma once
// The stages of a Hugging Face tokenizer.json, each an interface with one factory that reads its
// JSON section: normalizer -> pre_tokenizer -> model -> post_processor, and the decoder back.
// Every implementation is immutable once made, so one tokenizer serves many threads.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace unitrain::hf {

class JsonAt;

/// Rewrites a text before it is split (NFC, Lowercase, BertNormalizer, ...).
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};
/// The normalizer a tokenizer.json's "normalizer" describes. ConfigError naming the JSON path
/// and the type for a type it does not implement.
std::unique_ptr<Normalizer> make_normalizer(const JsonAt& json);

/// The pieces of a text on their way to the model.
struct Pieces {
  std::vector<std::string> texts;
  /// The texts still need GPT-2's byte-to-character mapping: the ByteLevel pre-tokenizer leaves
  /// it to the end, so that a word found in the tokenizer's cache never pays for it.
  bool byte_level = false;
  /// Applies the pending byte-level mapping (a pre-tokenizer after ByteLevel needs the text).
  void settle();
};

/// Splits texts into the pieces the model tokenizes one at a time (words, byte-level words).
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Replaces the pieces by their splits, in order. `first`: the pieces start the text (they
  /// are not after an added token), for Metaspace's prepend_scheme "first".
  virtual void split(Pieces& pieces, bool first) const = 0;
};
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonAt& json);

/// Turns one piece into ids (BPE, Unigram, WordPiece, WordLevel).
class Model {
 public:
  virtual ~Model() = default;
  /// Appends the ids of `piece` to `ids`.
  virtual void tokenize(std::string_view piece, std::vector<int>& ids) const = 0;
  /// Token -> id of the model's vocabulary (added tokens are the tokenizer's).
  virtual const std::unordered_map<std::string, int>& vocab() const = 0;
  /// The id of the model's unknown token, or -1.
  virtual int unk_id() const = 0;
};
std::unique_ptr<Model> make_model(const JsonAt& json);

/// Turns tokens back into text pieces (Hugging Face's decode_chain); the pieces are joined.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode(std::vector<std::string>& tokens) const = 0;
};
std::unique_ptr<Decoder> make_decoder(const JsonAt& json);

/// Adds the special tokens around one text's ids, or a pair's (BOS/EOS, [CLS]/[SEP]).
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// The ids of one text, or of a pair when `second` is given, with the special tokens added.
  virtual std::vector<int> process(const std::vector<int>& first,
                                   const std::vector<int>* second) const = 0;
};
/// Its special tokens' ids must be below `vocab_size` (the vocabulary and the added tokens).
std::unique_ptr<PostProcessor> make_post_processor(const JsonAt& json, int64_t vocab_size);

}  // namespace unitrain::hf
