#pragma once
// Pieces gpt2.cpp and llama.cpp share (not part of the public API).
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace unitrain::models {

/// `tokens` as int64 after checking them: integer ids [B, T], 1 <= T <= max_len, ids in
/// [0, vocab). ConfigError naming `model`, `max_key` and what was found.
torch::Tensor checked_tokens(const char* model, torch::Tensor tokens, int64_t max_len,
                             const char* max_key, int64_t vocab);

/// Whether `s` ends with `tail`.
inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace unitrain::models
