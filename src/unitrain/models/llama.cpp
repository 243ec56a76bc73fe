// llama: LlamaForCausalLM's computation under its own parameter names.
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <tuple>

#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/core/unit_parts.h"
#include "unitrain/models/hf_causal_lm.h"
#include "unitrain/models/hf_lm_parts.h"
#include "unitrain/models/llama_blocks.h"
#include "unitrain/models/lora.h"
#include "unitrain/models/model_checks.h"

namespace unitrain::models {
namespace {

using namespace llama_blocks;

/// The sizes distributed.tensor_parallel cuts must divide by its T: ConfigError naming the
/// config.json key otherwise; Phi-3's fused projections are refused.
void check_tensor_split(const LlamaConfig& c, int64_t t, const std::string& where,
                        const char* by = "distributed.tensor_parallel") {
  UT_CHECK(!c.fused_projections, where, ": ", c.model_type,
           "'s fused projections (qkv_proj, gate_up_proj) with ", by,
           " are "
           "not built yet; train it with data parallelism");
  auto check = [&](int64_t n, const char* key) {
    UT_CHECK(n % t == 0, where, ": ", key, " (", n, ") is not divisible by ", by, " (", t,
             "): ", c.model_type, " cuts it over the tensor group; use a T that divides it");
  };
  check(c.num_attention_heads, "num_attention_heads");
  check(c.kv_heads(), "num_key_value_heads");
  check(c.intermediate_size, "intermediate_size");
  // (The vocabulary is cut as evenly as it goes: tp::part_range.)
}

/// The rotary inverse frequencies as Hugging Face computes them (float32), with rope_scaling.
torch::Tensor inverse_frequencies(const LlamaConfig& c) {
  const int64_t d = c.head_width();
  auto exponents = torch::arange(0, d, 2, torch::kLong).to(torch::kFloat) / double(d);
  auto inv = torch::reciprocal(torch::pow(c.rope_theta, exponents));
  if (c.rope_type == "linear") return inv / c.rope_factor;
  if (c.rope_type != "llama3") return inv;
  // Llama 3: long wavelengths divided by factor, short ones kept, those between blended.
  const double original = double(c.original_max_position_embeddings);
  const double low_wavelen = original / c.low_freq_factor;
  const double high_wavelen = original / c.high_freq_factor;
  // (Python's scalar / tensor is a reciprocal then a product: the same here, for the same bits.)
  auto wavelen = torch::reciprocal(inv) * (2 * M_PI);
  auto scaled = torch::where(wavelen > low_wavelen, inv / c.rope_factor, inv);
  auto smooth = (torch::reciprocal(wavelen) * original - c.low_freq_factor) /
                (c.high_freq_factor - c.low_freq_factor);
  auto smoothed = (1 - smooth) * scaled / c.rope_factor + smooth * scaled;
  auto medium = wavelen.ge(high_wavelen).logical_and(wavelen.le(low_wavelen));
  return torch::where(medium, smoothed, scaled);
}

const HfFamily kLlamaFamily{"llama", &llama_model_name};

}  // namespace

LlamaImpl::LlamaImpl(const HfModelOptions& options)
    : LlamaImpl(options, read_llama_config(options.config_path("model.args.")), kLlamaFamily) {}

LlamaImpl::LlamaImpl(const HfModelOptions& options, LlamaConfig read, const HfFamily& family)
    : HfCausalLm(family.model_type.c_str()), config(std::move(read)) {
  const LlamaConfig& c = config;
  const bool fresh = options.pretrained.empty();
  const bool tied = c.tie_word_embeddings;
  info_.family = &family;
  info_.model_name = [tied](const std::string& name) { return llama_model_name(name, tied); };
  // Before a tensor is allocated: config.json's sizes against the weights' headers.
  check_config_shape(shape_of(c, options.config_path("model.args.")), options.pretrained,
                     info_.model_name);
  const std::string own_generation = generation_config_json(c.bos_token_ids, c.eos_token_ids);
  info_.generation_config_json =
      fresh ? own_generation
            : read_generation_config(options.pretrained, c.vocab_size, own_generation);
  info_.pretrained = options.pretrained;
  info_.config_json = c.json;

  inv_freq_ = inverse_frequencies(c);
  if (c.rope_local_theta > 0) {  // Gemma 3's local layers: their own base, no scaling
    LlamaConfig local = c;
    local.rope_theta = c.rope_local_theta;
    local.rope_type.clear();
    inv_freq_local_ = inverse_frequencies(local);
  }
  tensor_group_ = tp::building_group();
  if (tp::size_of(tensor_group_.get()) == 1) tensor_group_ = nullptr;
  if (tensor_group_) {
    check_tensor_split(c, tp::size_of(tensor_group_.get()), options.config_path("model.args."));
  }
  if (const int64_t chunks = tp::building_chunks()) {
    check_tensor_split(c, chunks, options.config_path("model.args."),
                       "distributed.reproducible_chunks");
  }
  cut_ = tp::building_cut();  // (distributed.reproducible_chunks: parallel layers on one too)
  body = register_module("model", std::make_shared<torch::nn::Module>());
  // HF's embedding keeps the padding row's gradient zero (nn.Embedding's padding_idx).
  const bool padded = c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size;
  if (cut_) {
    tp_embed = body->register_module(
        "embed_tokens", VocabParallelEmbedding(c.vocab_size, c.hidden_size, tensor_group_,
                                               padded ? c.pad_token_id : -1));
    if (fresh) initialise(*tp_embed, c);
    unit_built({tp_embed->weight});
  } else {
    auto embedding = torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size);
    if (padded) embedding.padding_idx(c.pad_token_id);
    embed_tokens = body->register_module("embed_tokens", torch::nn::Embedding(embedding));
    if (fresh) initialise(*embed_tokens, c);
    unit_built({embed_tokens->weight});
  }
  layers = body->register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    LlamaBlock block(c, tensor_group_);
    if (fresh) initialise(*block, c);
    unit_built(block->parameters());
    layers->push_back(block);
  }
  auto final_norm =
      body->register_module("norm", RmsNorm(c.hidden_size, c.rms_norm_eps, c.norm_plus_one));
  norm = final_norm.get();
  std::vector<torch::Tensor> last{final_norm->weight};
  if (!c.tie_word_embeddings && cut_) {
    tp_head = register_module(
        "lm_head", ColumnParallelLinear(c.hidden_size, c.vocab_size, false, tensor_group_));
    if (fresh) initialise(*tp_head, c);
    last.push_back(tp_head->weight);
  } else if (!c.tie_word_embeddings) {
    lm_head = register_module("lm_head", linear(c.hidden_size, c.vocab_size, false));
    if (fresh) initialise(*lm_head, c);
    last.push_back(lm_head->weight);
  }
  unit_built(last);
}

std::optional<VocabSplit> LlamaImpl::vocab_split() const {
  if (!cut_) return std::nullopt;
  return VocabSplit{tensor_group_, tp_embed->vocab_start(), config.vocab_size,
                    tp_head ? tp_head->chunks() : tp_embed->chunks()};
}

std::pair<torch::Tensor, torch::Tensor> LlamaImpl::rotary(const torch::Tensor& positions,
                                                          const torch::Tensor& inv_freq) const {
  // As Hugging Face: float32 positions times the inverse frequencies.
  auto freqs = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq.to(positions.device());
  auto angles = torch::cat({freqs, freqs}, -1);
  if (angles.dim() == 3) angles = angles.unsqueeze(1);  // [B, 1, T, D]: broadcast over heads
  return {angles.cos(), angles.sin()};
}

torch::Tensor LlamaImpl::checked(torch::Tensor tokens) const {
  return checked_tokens(config.model_type.c_str(), tokens, config.max_position_embeddings,
                        "max_position_embeddings", config.vocab_size);
}

std::vector<std::pair<size_t, torch::Tensor>> LlamaImpl::borrowed_parameters() {
  if (!config.tie_word_embeddings) return {};
  return {{layers->size() + 1, tp_embed ? tp_embed->weight : embed_tokens->weight}};
}

torch::Tensor LlamaImpl::run(torch::Tensor tokens, const TokenLayout& layout) {
  return run_units(std::move(tokens), layout, 0, layers->size() + 2, {});
}

torch::Tensor LlamaImpl::run_units(torch::Tensor tokens, const TokenLayout& layout, size_t first,
                                   size_t end, torch::Tensor x) {
  const bool tied = config.tie_word_embeddings;
  const size_t count = layers->size();
  std::vector<torch::Tensor> first_out;
  if (first == 0) {
    first_out = run_unit(
        0,
        [this, tied](const std::vector<torch::Tensor>& in) {
          if (tp_embed) return std::vector<torch::Tensor>{tp_embed(in[0]), tp_embed->weight};
          std::vector<torch::Tensor> out{embed_tokens->forward(in[0])};
          if (tied)
            out.push_back(units_run_apart() ? embed_tokens->weight.clone() : embed_tokens->weight);
          return out;
        },
        {tokens});
    x = first_out[0];
    // Gemma: the embeddings times sqrt(hidden_size), rounded to their dtype first.
    if (config.embed_scale) {
      x = x * torch::tensor(std::sqrt(double(config.hidden_size)), x.options());
    }
  }
  auto rope = [&](const torch::Tensor& inv_freq) {
    auto [c, s] = rotary(layout.positions, inv_freq);
    return std::pair{c.to(x.scalar_type()), s.to(x.scalar_type())};
  };
  const auto global = rope(inv_freq_);
  const auto local = inv_freq_local_.defined() ? rope(inv_freq_local_) : global;
  // Gemma 2/3: the sliding layers attend within the window, the others all.
  TokenLayout windowed = layout;
  if (!config.sliding_layers.empty()) {
    windowed.limit_window(config.sliding_window, tokens.size(1), tokens.device());
  }
  for (size_t i = std::max<size_t>(first, 1) - 1; i < count && i + 1 < end; ++i) {
    auto block = layers->ptr<LlamaBlockImpl>(i);
    const bool recompute = recomputes(i);
    const bool sliding = !config.sliding_layers.empty() && config.sliding_layers[i];
    const auto& [cos, sin] = sliding ? local : global;
    const TokenLayout& l = sliding ? windowed : layout;
    x = run_unit(
        1 + i,
        [block, cos = cos, sin = sin, l, i](const torch::Tensor& in) {
          return block->forward(in, cos, sin, l, i);
        },
        x, recompute);
  }
  if (end < count + 2) return x;
  std::vector<torch::Tensor> last_in{x};
  // A tied head on a pipeline's last stage: the embeddings it holds beside the first stage.
  if (tied) {
    last_in.push_back(!first_out.empty() ? first_out[1]
                      : tp_embed         ? tp_embed->weight
                                         : embed_tokens->weight);
  }
  auto* final_norm = norm->as<RmsNormImpl>();
  return run_unit(
      count + 1,
      [this, tied, final_norm](const std::vector<torch::Tensor>& in) {
        auto y = final_norm->forward(in[0]);
        // Tensor parallel: this process's vocabulary (a tied head: its rows of the embeddings).
        auto logits = tp_head ? project(tp_head, y)
                      : tied && cut_
                          ? tp::column_product(y, in[1], tensor_group_, tp_embed->chunks())
                      : tied ? torch::matmul(y, in[1].t())
                             : project(lm_head, y);
        if (const double cap = config.final_logit_softcapping; cap > 0) {  // Gemma 2
          const int64_t chunks = !cut_ ? 0 : tp_head ? tp_head->chunks() : tp_embed->chunks();
          logits = tp::chunkwise(
              logits, chunks, [cap](const torch::Tensor& l) { return torch::tanh(l / cap) * cap; });
        }
        return std::vector{logits};
      },
      last_in)[0];
}

std::vector<std::vector<torch::Tensor>> LlamaImpl::units() {
  std::vector<std::vector<torch::Tensor>> out;
  out.push_back({tp_embed ? tp_embed->weight : embed_tokens->weight});
  for (const auto& block : *layers) out.push_back(block->parameters());
  std::vector<torch::Tensor> last{norm->as<RmsNormImpl>()->weight};
  if (lm_head) last.push_back(lm_head->weight);
  if (tp_head) last.push_back(tp_head->weight);
  out.push_back(std::move(last));
  return out;
}

void register_llama() {
  register_declared_model<HfModelOptions, LlamaImpl>(
      "llama",
      "Llama causal LM (Llama 2 and 3) from a Hugging Face folder (args.pretrained) or "
      "config.json (args.config), Hugging Face's parameter names: token ids [B, T] -> logits "
      "[B, T, vocab]");
  register_hf_family(kLlamaFamily);
}

void register_llama_family(const HfFamily& family, LlamaConfig (*read)(const std::string& path),
                           const std::string& help) {
  model_registry().add<HfModelOptions>(
      family.model_type, help, [&family, read](const HfModelOptions& o) -> ModelPtr {
        return std::make_shared<LlamaImpl>(o, read(o.config_path("model.args.")), family);
      });
  register_hf_family(family);
}

}  // namespace unitrain::models
