// What gpt2 and llama share: their args, the token check; their registration (each family
// registers itself beside its model).
#include "unitrain/models/hf_causal_lm.h"

#include <algorithm>

#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/models/hf_lm_parts.h"
#include "unitrain/models/model_checks.h"

namespace unitrain::models {

void HfModelOptions::declare(Options<HfModelOptions>& o) {
  using T = HfModelOptions;
  o.field("pretrained", &T::pretrained)
      .help(
          "a Hugging Face model folder (config.json, model.safetensors or its shards with "
          "model.safetensors.index.json, or pytorch_model.bin): the model's shape and its "
          "weights; not read when resuming (the checkpoint's weights are the run's)");
  o.field("config", &T::config)
      .help("a config.json alone: a fresh model of its shape, initialised as Hugging Face does");
  o.check([](T& m, const Config& c) { m.config_path(c.path().empty() ? "" : c.path() + "."); });
}

torch::Tensor Conv1DImpl::forward(const torch::Tensor& x) {
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(1);
  return torch::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(sizes);
}

torch::Tensor checked_tokens(const char* model, torch::Tensor tokens, int64_t max_len,
                             const char* max_key, int64_t vocab) {
  UT_CHECK(tokens.dim() == 2 && !tokens.is_floating_point() && !tokens.is_complex(), model,
           ": expected integer token ids of shape [batch, time], got ", tokens.scalar_type(),
           " of shape ", shape_string(tokens));
  UT_CHECK(tokens.size(1) >= 1 && tokens.size(1) <= max_len, model, ": expected at most ", max_key,
           " = ", max_len, " tokens per sequence (config.json), got shape ", shape_string(tokens),
           "; cut the sequences shorter (the dataset's seq_len or max_length)");
  if (tokens.numel() > 0) {
    const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
    UT_CHECK(lo >= 0 && hi < vocab, model, ": token ids must be in [0, vocab_size = ", vocab,
             "), got ids from ", lo, " to ", hi, " (is the tokenizer the model's?)");
  }
  return tokens.to(torch::kLong);
}

torch::Tensor HfCausalLm::forward(torch::Tensor tokens) {
  tokens = checked(tokens);
  TokenLayout layout = TokenLayout::causal(tokens.size(1), tokens.device());
  layout.limit_window(attention_window(), tokens.size(1), tokens.device());
  return run(tokens, layout);
}

torch::Tensor HfCausalLm::forward(torch::Tensor tokens, const torch::Tensor& segments) {
  tokens = checked(tokens);
  TokenLayout layout = TokenLayout::packed(segments, tokens, type_);
  layout.limit_window(attention_window(), tokens.size(1), tokens.device());
  return run(tokens, layout);
}

torch::Tensor HfCausalLm::forward_cached(torch::Tensor tokens, KvCache& cache) {
  tokens = checked(tokens);
  UT_CHECK(cache.pads.empty() || static_cast<int64_t>(cache.pads.size()) == tokens.size(0), type_,
           ": the cache pads ", cache.pads.size(), " rows, the tokens have ", tokens.size(0));
  // Padding takes no position: the longest row's are what must fit.
  const int64_t padding =
      cache.pads.empty() ? 0 : *std::min_element(cache.pads.begin(), cache.pads.end());
  UT_CHECK(cache.length - padding + tokens.size(1) <= max_length(), type_, ": ",
           cache.length - padding, " + ", tokens.size(1), " tokens are more than the model's ",
           max_length(),
           " positions (config.json); generate fewer new tokens or give a shorter prompt");
  TokenLayout layout = TokenLayout::cached(tokens.size(1), cache, tokens.device());
  layout.limit_window(attention_window(), tokens.size(1), tokens.device());
  torch::Tensor logits = run(tokens, layout);
  cache.length += tokens.size(1);
  return logits;
}

std::vector<torch::Tensor> HfCausalLm::forward_all(const std::vector<torch::Tensor>& inputs) {
  check_input_count(type_, inputs, 1, 2);
  return forward_with_context(type_, inputs, [&] {
    return std::vector{inputs.size() == 2 ? forward(inputs[0], inputs[1]) : forward(inputs[0])};
  });
}

torch::Tensor HfCausalLm::forward_units(const std::vector<torch::Tensor>& inputs, size_t first,
                                        size_t end, const torch::Tensor& x) {
  check_input_count(type_, inputs, 1, 2);
  const torch::Tensor tokens = checked(inputs[0]);
  TokenLayout layout = inputs.size() == 2 ? TokenLayout::packed(inputs[1], tokens, type_)
                                          : TokenLayout::causal(tokens.size(1), tokens.device());
  layout.limit_window(attention_window(), tokens.size(1), tokens.device());
  return run_units(tokens, layout, first, end, x);
}

std::vector<double> HfCausalLm::unit_costs() {
  std::vector<double> costs = Model::unit_costs();
  if (!costs.empty()) costs.front() = 0;
  return costs;
}

bool HfCausalLm::checkpoint_activations(int64_t every) {
  UT_CHECK(every >= 0, type_, ": activation checkpointing every ", every,
           " blocks; give a count >= 1 (or 0 = off)");
  checkpoint_every_ = every;
  return true;
}

void register_hf_causal_lms() {
  register_gpt2();
  register_llama();
  register_qwen();
  register_mistral();
  register_gemma();
  register_phi3();
}

}  // namespace unitrain::models
