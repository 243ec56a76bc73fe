#pragma once
// `unitrain tokenizer train`: a SentencePiece model trained on text files.
#include <cstdint>
#include <string>
#include <vector>

#include "unitrain/text/text_lines.h"

namespace unitrain {

/// What to train. Fixed piece ids: unk 0 (<unk>), bos 1 (<s>), eos 2 (</s>) as SentencePiece's
/// own defaults, and pad 3 (<pad>), which SentencePiece leaves out by default.
struct TokenizerTrainOptions {
  std::vector<std::string> inputs;     ///< text files, read as the `text` dataset reads them
  int64_t vocab_size = 0;              ///< pieces, the four above included
  std::string model_type = "unigram";  ///< unigram | bpe | char | word
  std::string out = "tokenizer";       ///< writes out.model and out.vocab
  TextFormat format = TextFormat::Auto;
  std::string field = "text";
  double character_coverage = 0.9995;  ///< share of characters the pieces cover; rare ones -> unk
  bool force = false;                  ///< replace existing out.model / out.vocab
};

/// The values of TokenizerTrainOptions::model_type.
inline const std::vector<std::string> kTokenizerModelTypes = {"unigram", "bpe", "char", "word"};
inline constexpr int64_t kTokenizerUnkId = 0, kTokenizerBosId = 1, kTokenizerEosId = 2,
                         kTokenizerPadId = 3;

/// Trains with SentencePiece's trainer on every non-blank text of the inputs and writes
/// `out.model` and `out.vocab` (to `out.partial-<pid>.*` first, renamed when complete). Returns
/// the .model path. ConfigError for bad options, a missing or bad input (named) and an existing
/// output without `force`; TrainError with SentencePiece's message when it cannot train (e.g. a
/// vocabulary larger than the text allows).
std::string train_tokenizer(const TokenizerTrainOptions& options);

}  // namespace unitrain
