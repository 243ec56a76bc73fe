#pragma once
// A SentencePiece tokenizer: a .model file loaded for encoding, and training a new one.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "unitrain/text/tokenizer.h"

namespace unitrain {

namespace sentencepiece_module {
class Processor;
}

/// A SentencePiece model (a `.model` file from `unitrain tokenizer train`, spm_train or
/// Python's sentencepiece), loaded through libunitrain_sentencepiece.so. encode() is const and
/// safe to call from several loader threads at once. ConfigError naming the file when it is
/// missing or not a SentencePiece model, or when the module cannot be loaded.
class SentencePieceModel : public Tokenizer {
 public:
  explicit SentencePieceModel(const std::string& path);
  ~SentencePieceModel() override;
  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;

  /// The ids of `text`, as Python's `SentencePieceProcessor.encode(text)` gives them (no bos or
  /// eos). TrainError when SentencePiece refuses it.
  std::vector<int> encode(std::string_view text) const override;
  /// As Python's `SentencePieceProcessor.decode(ids)`.
  std::string decode(const std::vector<int>& ids) const override;
  std::string id_to_token(int64_t id) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  /// The ids of these pieces; -1 when the model has none.
  int64_t bos_id() const override { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return pad_id_; }
  int64_t unk_id() const override { return unk_id_; }
  const std::string& path() const override { return path_; }

 private:
  std::unique_ptr<sentencepiece_module::Processor> processor_;
  std::string path_;
  int64_t vocab_size_ = 0, bos_id_ = -1, eos_id_ = -1, pad_id_ = -1, unk_id_ = -1;
};

/// Runs SentencePiece's trainer with `args` (its own flag names and values: model_prefix,
/// vocab_size, model_type, ...) on the sentences `next` gives one at a time (false after the
/// last; it must not throw). TrainError with SentencePiece's message when training fails
/// (e.g. a vocabulary larger than the text allows); ConfigError when the module cannot load.
void train_sentencepiece(const std::map<std::string, std::string>& args,
                         const std::function<bool(std::string&)>& next);

}  // namespace unitrain
