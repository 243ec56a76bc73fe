#include "unitrain/models/generation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "unitrain/core/error.h"
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {

void GenerationOptions::validate(const char* key_prefix) const {
  UT_CHECK(max_new_tokens >= 1, key_prefix, "max_new_tokens must be >= 1, got ", max_new_tokens);
  UT_CHECK(min_new_tokens >= 0 && min_new_tokens <= max_new_tokens, key_prefix,
           "min_new_tokens must be in [0, max_new_tokens = ", max_new_tokens, "], got ",
           min_new_tokens);
  UT_CHECK(temperature >= 0, key_prefix, "temperature must be >= 0 (0 = greedy), got ",
           temperature);
  UT_CHECK(top_k >= 0, key_prefix, "top_k must be >= 0 (0 = all tokens), got ", top_k);
  UT_CHECK(top_p > 0 && top_p <= 1, key_prefix, "top_p must be in (0, 1], got ", top_p);
  UT_CHECK(repetition_penalty > 0, key_prefix, "repetition_penalty must be > 0 (1 = none), got ",
           repetition_penalty);
}

namespace {

/// Hugging Face's RepetitionPenaltyLogitsProcessor on float32 logits [V], in place.
void penalise(torch::Tensor& logits, const std::vector<int64_t>& seen, double penalty) {
  if (penalty == 1) return;
  std::vector<int64_t> unique = seen;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  auto ids = torch::tensor(unique, torch::kLong);
  auto scores = logits.index_select(0, ids);
  scores = torch::where(scores < 0, scores * penalty, scores / penalty);
  logits.index_copy_(0, ids, scores);
}

/// Sampling's filters (temperature, top-k, top-p as Hugging Face's warpers) and the draw.
int64_t sample(torch::Tensor logits, const GenerationOptions& o, at::Generator& gen) {
  const double lowest = -std::numeric_limits<double>::infinity();
  logits = logits / o.temperature;
  if (o.top_k > 0 && o.top_k < logits.size(0)) {
    const auto kth = std::get<0>(logits.topk(o.top_k)).min();
    logits = logits.masked_fill(logits < kth, lowest);
  }
  if (o.top_p < 1) {
    auto [sorted, order] = logits.sort(/*dim=*/0, /*descending=*/false);
    auto cumulative = sorted.softmax(0).cumsum(0);
    auto drop = cumulative <= 1 - o.top_p;
    drop[-1] = false;  // the most likely token always stays
    logits = logits.index_fill(0, order.masked_select(drop), lowest);
  }
  return torch::multinomial(logits.softmax(0), 1, false, gen).item<int64_t>();
}

/// The next token's id from the last position's logits, the `made`-th new one.
int64_t choose(torch::Tensor logits, const std::vector<int64_t>& seen, int64_t made,
               const GenerationOptions& o, at::Generator& gen) {
  logits = logits.to(torch::kCPU, torch::kFloat).clone();
  if (made < o.min_new_tokens) {  // MinNewTokensLengthLogitsProcessor
    for (int64_t id : o.stop_ids) {
      if (id >= 0 && id < logits.size(0)) logits[id] = -std::numeric_limits<float>::infinity();
    }
  }
  penalise(logits, seen, o.repetition_penalty);
  if (o.temperature == 0) return logits.argmax().item<int64_t>();
  return sample(logits, o, gen);
}

/// ConfigError unless `prompt` and max_new_tokens fit the model.
void check_prompt(const HfCausalLm& model, const std::vector<int64_t>& prompt,
                  const GenerationOptions& o) {
  UT_CHECK(!prompt.empty(), "generate: the prompt encodes to no tokens");
  const auto total = static_cast<int64_t>(prompt.size()) + o.max_new_tokens;
  UT_CHECK(total <= model.max_length(), "generate: a prompt of ", prompt.size(), " tokens and ",
           o.max_new_tokens, " new ones exceed the model's ", model.max_length(),
           " positions; lower max_new_tokens or shorten the prompt");
}

}  // namespace

std::vector<std::vector<int64_t>> generate_batch(
    HfCausalLm& model, const std::vector<std::vector<int64_t>>& prompts, const GenerationOptions& o,
    const std::function<bool(size_t, const std::vector<int64_t>&)>& stop) {
  o.validate("generation.");
  size_t longest = 0;
  for (const auto& p : prompts) {
    check_prompt(model, p, o);
    longest = std::max(longest, p.size());
  }
  const size_t rows = prompts.size();
  std::vector<std::vector<int64_t>> out(rows);
  if (rows == 0) return out;
  torch::NoGradGuard no_grad;
  const torch::Device device = model.parameters().front().device();
  std::vector<at::Generator> gens;
  std::vector<std::vector<int64_t>> seen = prompts;
  std::vector<int64_t> pads;
  std::vector<int64_t> padded;
  for (const auto& p : prompts) {
    gens.push_back(at::make_generator<at::CPUGeneratorImpl>(o.seed));
    pads.push_back(static_cast<int64_t>(longest - p.size()));
    padded.insert(padded.end(), longest - p.size(), p.front());  // any id: nothing attends it
    padded.insert(padded.end(), p.begin(), p.end());
  }
  const auto longs = torch::TensorOptions().dtype(torch::kLong);
  torch::Tensor all = torch::tensor(padded, longs).view({static_cast<int64_t>(rows), -1});
  torch::Tensor next = all.to(device);
  KvCache cache;
  cache.pads = pads;
  std::vector<bool> done(rows, false);
  for (int64_t made = 0; made < o.max_new_tokens; ++made) {
    torch::Tensor logits;
    if (o.use_cache) {
      logits = model.forward_cached(next, cache);
    } else {
      KvCache whole;  // the whole sequence again, as forward() computes it
      whole.pads = pads;
      logits = model.forward_cached(all.to(device), whole);
    }
    std::vector<int64_t> chosen(rows);
    bool any = false;
    for (size_t b = 0; b < rows; ++b) {
      if (done[b]) {
        chosen[b] = seen[b].back();  // a finished row's step is computed and not read
        continue;
      }
      const int64_t id = choose(logits[static_cast<int64_t>(b)][-1], seen[b], made, o, gens[b]);
      chosen[b] = id;
      seen[b].push_back(id);
      out[b].push_back(id);
      done[b] = std::find(o.stop_ids.begin(), o.stop_ids.end(), id) != o.stop_ids.end() ||
                (stop && stop(b, out[b]));
      any = any || !done[b];
    }
    if (!any) break;
    next = torch::tensor(chosen, longs).view({static_cast<int64_t>(rows), 1});
    if (!o.use_cache) all = torch::cat({all, next}, 1);  // the whole sequence, recomputed
    next = next.to(device);
  }
  return out;
}

std::vector<int64_t> generate(HfCausalLm& model, const std::vector<int64_t>& prompt,
                              const GenerationOptions& o,
                              const std::function<bool(const std::vector<int64_t>&)>& stop) {
  o.validate("generation.");
  check_prompt(model, prompt, o);
  torch::NoGradGuard no_grad;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
  const torch::Device device = model.parameters().front().device();
  std::vector<int64_t> seen = prompt, out;
  KvCache cache;
  torch::Tensor next = torch::tensor(prompt, torch::kLong).unsqueeze(0).to(device);
  while (static_cast<int64_t>(out.size()) < o.max_new_tokens) {
    torch::Tensor logits =
        o.use_cache ? model.forward_cached(next, cache)
                    : model.forward(torch::tensor(seen, torch::kLong).unsqueeze(0).to(device));
    const int64_t id = choose(logits[0][-1], seen, static_cast<int64_t>(out.size()), o, gen);
    seen.push_back(id);
    out.push_back(id);
    if (std::find(o.stop_ids.begin(), o.stop_ids.end(), id) != o.stop_ids.end()) break;
    if (stop && stop(out)) break;
    next = torch::full({1, 1}, id, torch::TensorOptions().dtype(torch::kLong).device(device));
  }
  return out;
}

}  // namespace unitrain::models
