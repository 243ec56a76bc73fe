#pragma once
// What the models of tokenizer.json (BPE, WordPiece, WordLevel) read alike.
#include <array>
#include <string>
#include <unordered_map>

namespace unitrain::hf {

class JsonAt;

/// The "vocab" object (token -> id). ConfigError naming the path for a non-integer or
/// negative id.
std::unordered_map<std::string, int> read_vocab(const JsonAt& vocab);
/// The id of the model's `key` token ("unk_token"), -1 when the key is missing or null.
/// ConfigError when the token is not in the vocabulary.
int token_id(const JsonAt& model, const std::string& key,
             const std::unordered_map<std::string, int>& vocab);

/// byte_fallback's pieces: the id of each byte's <0xXX> in `vocab`, -1 where there is none.
std::array<int, 256> byte_fallback_ids(const std::unordered_map<std::string, int>& vocab);

}  // namespace unitrain::hf
