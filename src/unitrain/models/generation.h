#pragma once
// generate: new tokens from a causal LM after a prompt — greedy or sampled (temperature, top-k,
// top-p), with a repetition penalty, stop ids and a caller's stop test, with or without a KV cache.
#include <cstdint>
#include <functional>
#include <vector>

namespace unitrain::models {

class HfCausalLm;

/// How generate() chooses each new token. Hugging Face's order: the repetition penalty on the
/// logits, then (sampling) temperature, top-k, top-p, then a draw from the softmax.
struct GenerationOptions {
  int64_t max_new_tokens = 64;
  /// No stop id is chosen before this many new tokens (Hugging Face's min_new_tokens: their
  /// logits are -inf until then); stop strings still end a completion.
  int64_t min_new_tokens = 0;
  /// 0: greedy (the most likely token, ties to the lowest id); > 0: sample at this temperature.
  double temperature = 0;
  int64_t top_k = 0;  ///< sampling: only the k most likely tokens; 0 = all
  double top_p = 1;   ///< sampling: the fewest most likely tokens whose mass reaches p
  /// > 1 makes tokens already in the prompt or generated less likely (CTRL's penalty, as
  /// Hugging Face applies it: a positive logit divided by it, a negative one multiplied).
  double repetition_penalty = 1;
  uint64_t seed = 0;      ///< the draws' generator (same seed, same tokens)
  bool use_cache = true;  ///< keep each block's keys and values (KvCache); false recomputes all
  std::vector<int64_t> stop_ids;  ///< end after generating one of these (kept in the output)

  /// ConfigError naming the option (as `key_prefix`<name>) when one is out of range.
  void validate(const char* key_prefix) const;
};

/// The ids `model` generates after `prompt` (not including it), at most max_new_tokens, ending
/// early at a stop id or when `stop` (given the ids generated so far) says so. Runs without
/// gradients in the model's current mode (call eval() first) on its device. One sequence at a
/// time: no padding changes its numbers. ConfigError for an empty prompt or one that with
/// max_new_tokens exceeds the model's positions.
std::vector<int64_t> generate(HfCausalLm& model, const std::vector<int64_t>& prompt,
                              const GenerationOptions& options,
                              const std::function<bool(const std::vector<int64_t>&)>& stop = {});

/// The ids `model` generates after each of `prompts`, all in one batch: the prompts padded on
/// the left (KvCache::pads: the padding takes no position and nothing attends it), each row
/// choosing with its own generator seeded by `options.seed` and ending on its own; a row's
/// tokens are those generate() gives it alone (its logits the same to float rounding: the
/// products run over more rows). `stop(row, ids)` as generate()'s `stop` for row `row`.
/// ConfigError for an empty prompt, or the longest with max_new_tokens past the positions.
std::vector<std::vector<int64_t>> generate_batch(
    HfCausalLm& model, const std::vector<std::vector<int64_t>>& prompts,
    const GenerationOptions& options,
    const std::function<bool(size_t, const std::vector<int64_t>&)>& stop = {});

}  // namespace unitrain::models
