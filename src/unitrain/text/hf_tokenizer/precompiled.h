#pragma once
// The Precompiled normalizer of tokenizer.json: SentencePiece's own normalization rules
// (nmt_nfkc and the like) as transformers copies them from a .model's precompiled_charsmap.
#include <memory>

#include "unitrain/text/hf_tokenizer/components.h"

namespace unitrain::hf {

/// {"type": "Precompiled", "precompiled_charsmap": base64}: the charsmap is SentencePiece's
/// double-array trie (darts-clone) of the strings it rewrites, then the rewritten strings, each
/// ended by '\0': [trie size in bytes: u32 LE][trie: u32 LE units][strings]. A text is rewritten
/// as Hugging Face's spm_precompiled does: an extended grapheme cluster shorter than 6 bytes that
/// starts with a key becomes the rewriting of the shortest such key; otherwise each character
/// that is a key becomes its rewriting, the others stay.
///
/// The charsmap is checked whole before use: ConfigError naming the file and the path for one
/// that is not base64, is shorter than its trie size says, has a trie of no whole units, strings
/// that are not UTF-8, or a trie that points (from any place a text can reach) outside itself or
/// the strings. A text then never reads outside the charsmap.
std::unique_ptr<Normalizer> make_precompiled_normalizer(const JsonAt& json);

}  // namespace unitrain::hf
