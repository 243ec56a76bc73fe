#pragma once
// TokenLayout: where each token of a causal LM's input sits (its position) and which tokens it
// attends, for one sequence a row, for packed rows (segment ids) and for incremental decoding
// (a KV cache). gpt2, llama and transformer_lm read their positions and masks from it.
#include <torch/types.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace unitrain::models {

/// The keys and values each block computed for the tokens decoded so far, so that the next
/// token's forward computes only its own (HfCausalLm::forward_cached; for inference, without
/// gradients). Built empty; the model fills it. Its buffers are [B, kv heads, room, head dim]
/// (before any grouped-query repeat), the first `length` positions in use; the room doubles
/// when full, so a new token costs the copy of its own keys and values only.
struct KvCache {
  std::vector<torch::Tensor> keys, values;  ///< one buffer per block
  int64_t length = 0;                       ///< tokens the cache holds (forward_cached moves it)
  /// Left padding of each row of a batch of prompts (empty: none): row b's first pads[b]
  /// tokens are padding, which nothing attends and which take no position.
  std::vector<int64_t> pads;

  /// Block `block`'s keys and values of positions [0, length + new) with the new `k`, `v`
  /// written at `length` (kept for the next call; `length` moves once every block has them).
  std::pair<torch::Tensor, torch::Tensor> extend(size_t block, const torch::Tensor& k,
                                                 const torch::Tensor& v);
};

/// Positions and attention of a forward's tokens [B, T].
/// - causal(): each row one sequence; token t at position t attends tokens 0..t.
/// - packed(segments): each row several examples one after another, `segments` int64 [B, T]
///   numbering them (equal ids on consecutive tokens); a token attends the earlier tokens of
///   its own example only (a block-diagonal causal mask) and positions restart at 0 with each
///   example, so a packed example computes what it computes alone.
/// - cached(): T new tokens after the `cache->length` a KV cache holds, at positions
///   length..length+T-1, each attending every cached token and the new ones up to itself;
///   with the cache's `pads`, row b's positions start after its pads[b] padding tokens, which
///   no token attends (a padding token attends itself alone), so a row's numbers are those it
///   has alone.
struct TokenLayout {
  torch::Tensor positions;  ///< int64 [T] (every row alike) or [B, T]
  torch::Tensor allowed;    ///< bool, broadcast to [B, 1, T, keys]; undefined = causal over T
  KvCache* cache = nullptr;

  static TokenLayout causal(int64_t t, const torch::Device& device);
  /// ConfigError naming `model` unless `segments` is integer [B, T] of `tokens`' shape.
  static TokenLayout packed(const torch::Tensor& segments, const torch::Tensor& tokens,
                            const char* model);
  static TokenLayout cached(int64_t t, KvCache& cache, const torch::Device& device);

  /// Sliding-window attention (Mistral's sliding_window): a token at position p attends the
  /// keys at positions p - window + 1 .. p only (within what the layout already allows); `t`
  /// the forward's tokens. Nothing changes while every key is within the window; 0 = no window.
  void limit_window(int64_t window, int64_t t, const torch::Device& device);

  /// Attention of q [B, H, T, D] over k, v [B, H, keys, D] as the layout allows.
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       double dropout) const;
  /// The same written out as Hugging Face's eager attention (Gemma 2's): the scores q k^T
  /// times `scale`, soft-capped (cap tanh(scores / cap); `softcap` 0 = not), the disallowed
  /// ones -inf, the softmax in float32.
  torch::Tensor attend_eager(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             double dropout, double scale, double softcap) const;
};

}  // namespace unitrain::models
