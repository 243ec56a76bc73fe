#pragma once
// Pieces gpt2.cpp and llama.cpp share (not part of the public API).
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace unitrain::models {

/// Hugging Face's Conv1D: a linear layer whose weight is [in, out] (y = x W + b).
class Conv1DImpl : public torch::nn::Module {
 public:
  Conv1DImpl(int64_t in, int64_t out) {
    weight = register_parameter("weight", torch::empty({in, out}));
    bias = register_parameter("bias", torch::zeros({out}));
  }
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;
};
TORCH_MODULE(Conv1D);

/// `tokens` as int64 after checking them: integer ids [B, T], 1 <= T <= max_len, ids in
/// [0, vocab). ConfigError naming `model`, `max_key` and what was found.
torch::Tensor checked_tokens(const char* model, torch::Tensor tokens, int64_t max_len,
                             const char* max_key, int64_t vocab);

/// Whether `s` ends with `tail`.
inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace unitrain::models
