#pragma once
// The Unigram model of tokenizer.json (T5's, ALBERT's, XLNet's: SentencePiece's Unigram
// converted by transformers).
#include <memory>

#include "unitrain/text/hf_tokenizer/components.h"

namespace unitrain::hf {

/// "model": {"type": "Unigram", "vocab": [[piece, score], ...], "unk_id", "byte_fallback"}: a
/// piece's id is its place in "vocab". A piece of text is split where the sum of its pieces'
/// scores is highest (Viterbi, as SentencePiece and Hugging Face's Unigram::encode_optimized do);
/// a character that no piece starts with is unk, scored 10 below the lowest piece, and unknown
/// characters in a row are one unk. With byte_fallback an unk becomes its bytes' <0xXX> pieces
/// when the vocabulary has them all.
///
/// ConfigError naming the file and the path for an empty vocabulary, an entry that is not
/// [string, finite number] and an unk_id that is not an id of the vocabulary. tokenize() throws
/// TrainError for a character no piece covers when the model has no unk_id (Hugging Face fails
/// the same text with MissingUnkId).
std::unique_ptr<Model> make_unigram_model(const JsonAt& json);

}  // namespace unitrain::hf
