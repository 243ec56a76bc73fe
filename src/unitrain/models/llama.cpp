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
#include "unitrain/models/lora.h"
#include "unitrain/models/model_checks.h"

namespace unitrain::models {
namespace {

/// LlamaRMSNorm: the mean square taken in float32, the result cast back before the weight.
/// GemmaRMSNorm (`plus_one`): the weight stored as w - 1 (zero when fresh), the product
/// x * (1 + w) taken in float32 before the cast.
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t width, double eps, bool plus_one = false) : eps_(eps), plus_one_(plus_one) {
    weight = register_parameter("weight", plus_one ? torch::zeros({width}) : torch::ones({width}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto f = x.to(torch::kFloat);
    f = f * torch::rsqrt(f.pow(2).mean(-1, /*keepdim=*/true) + eps_);
    if (plus_one_) return (f * (1.0 + weight.to(torch::kFloat))).to(x.scalar_type());
    return weight * f.to(x.scalar_type());
  }
  torch::Tensor weight;

 private:
  double eps_;
  bool plus_one_;
};
TORCH_MODULE(RmsNorm);

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

/// Hugging Face's rotate_half: [x1, x2] -> [-x2, x1] over the last dimension's halves.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

/// Under tensor parallelism (`group` of T > 1 processes): q, k and v cut by heads (each
/// process its heads / T query heads and kv_heads / T key/value heads: a group's queries keep
/// their key/value head), o_proj by its input.
class LlamaAttentionImpl : public torch::nn::Module {
 public:
  LlamaAttentionImpl(const LlamaConfig& c, const std::shared_ptr<ProcessGroup>& group)
      : heads_(c.num_attention_heads / tp::size_of(group.get())),
        kv_heads_(c.kv_heads() / tp::size_of(group.get())),
        head_dim_(c.head_width()),
        dropout_(c.attention_dropout),
        softcap_(c.attn_logit_softcapping) {
    // Gemma 2/3 scale the scores by query_pre_attn_scalar^-1/2 (often head_dim's own).
    if (c.query_pre_attn_scalar > 0 && c.query_pre_attn_scalar != double(c.head_width())) {
      scale_ = 1.0 / std::sqrt(c.query_pre_attn_scalar);
    }
    const int64_t hd = c.head_width();
    if (group) {  // cut over the tensor group (the fused Phi-3 projections are refused before)
      const int64_t h = c.num_attention_heads, kv = c.kv_heads();
      tp_q =
          register_module("q_proj", ColumnParallelLinear(c.hidden_size, h * hd, c.qkv_bias, group));
      tp_k = register_module("k_proj",
                             ColumnParallelLinear(c.hidden_size, kv * hd, c.qkv_bias, group));
      tp_v = register_module("v_proj",
                             ColumnParallelLinear(c.hidden_size, kv * hd, c.qkv_bias, group));
      tp_o = register_module("o_proj", RowParallelLinear(h * hd, c.hidden_size, c.o_bias, group));
    } else if (c.fused_projections) {  // Phi-3: q, k and v as one Linear
      qkv_proj = register_module("qkv_proj",
                                 linear(c.hidden_size, (heads_ + 2 * kv_heads_) * hd, c.qkv_bias));
    } else {
      q_proj = register_module("q_proj", linear(c.hidden_size, heads_ * hd, c.qkv_bias));
      k_proj = register_module("k_proj", linear(c.hidden_size, kv_heads_ * hd, c.qkv_bias));
      v_proj = register_module("v_proj", linear(c.hidden_size, kv_heads_ * hd, c.qkv_bias));
    }
    if (!group) o_proj = register_module("o_proj", linear(heads_ * hd, c.hidden_size, c.o_bias));
    if (c.qk_norm) {  // Qwen3: over each head's width
      q_norm = register_module("q_norm", RmsNorm(hd, c.rms_norm_eps, c.norm_plus_one));
      k_norm = register_module("k_norm", RmsNorm(hd, c.rms_norm_eps, c.norm_plus_one));
    }
  }
  /// `cos`, `sin`: [T, head_dim] or [B, 1, T, head_dim] in x's dtype; `layout`: the tokens'
  /// attention (a KV cache's block `block` when it has one).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const TokenLayout& layout, size_t block) {
    const int64_t b = x.size(0), t = x.size(1);
    auto heads = [&](const torch::Tensor& m) {
      return m.view({b, t, -1, head_dim_}).transpose(1, 2);
    };
    torch::Tensor q, k, v;
    if (tp_q) {
      q = heads(tp_q(x));
      k = heads(tp_k(x));
      v = heads(tp_v(x));
    } else if (qkv_proj) {
      const torch::Tensor qkv = project(qkv_proj, x);
      const int64_t nq = heads_ * head_dim_, nkv = kv_heads_ * head_dim_;
      q = heads(qkv.narrow(-1, 0, nq));
      k = heads(qkv.narrow(-1, nq, nkv));
      v = heads(qkv.narrow(-1, nq + nkv, nkv));
    } else {
      q = heads(project(q_proj, x));
      k = heads(project(k_proj, x));
      v = heads(project(v_proj, x));
    }
    if (q_norm) {
      q = q_norm->forward(q);
      k = k_norm->forward(k);
    }
    q = q * cos + rotate_half(q) * sin;
    k = k * cos + rotate_half(k) * sin;
    if (layout.cache) std::tie(k, v) = layout.cache->extend(block, k, v);
    if (kv_heads_ != heads_) {  // grouped-query attention: each k/v head serves heads/kv_heads
      k = k.repeat_interleave(heads_ / kv_heads_, 1);
      v = v.repeat_interleave(heads_ / kv_heads_, 1);
    }
    const double dropout = is_training() ? dropout_ : 0.0;
    auto y = softcap_ > 0 || scale_ > 0
                 ? layout.attend_eager(q, k, v, dropout,
                                       scale_ > 0 ? scale_ : 1.0 / std::sqrt(double(head_dim_)),
                                       softcap_)
                 : layout.attend(q, k, v, dropout);
    const torch::Tensor joined = y.transpose(1, 2).reshape({b, t, heads_ * head_dim_});
    return tp_o ? tp_o(joined) : project(o_proj, joined);
  }
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  ColumnParallelLinear tp_q{nullptr}, tp_k{nullptr}, tp_v{nullptr};  ///< tensor parallel
  RowParallelLinear tp_o{nullptr};
  torch::nn::Linear qkv_proj{nullptr};       ///< Phi-3's, in place of q/k/v_proj
  RmsNorm q_norm{nullptr}, k_norm{nullptr};  ///< Qwen3's; null for the others

 private:
  int64_t heads_, kv_heads_, head_dim_;
  double dropout_;
  double softcap_;    ///< Gemma 2: the scores' soft cap; 0 = none
  double scale_ = 0;  ///< the scores' scale when not head_dim^-1/2; 0 = that
};
TORCH_MODULE(LlamaAttention);

/// Under tensor parallelism: gate and up cut by the intermediate width, down by its input.
class LlamaMlpImpl : public torch::nn::Module {
 public:
  LlamaMlpImpl(const LlamaConfig& c, const std::shared_ptr<ProcessGroup>& group)
      : gelu_tanh_(c.gelu_tanh) {
    if (group) {
      const int64_t in = c.hidden_size, mid = c.intermediate_size;
      tp_gate = register_module("gate_proj", ColumnParallelLinear(in, mid, c.mlp_bias, group));
      tp_up = register_module("up_proj", ColumnParallelLinear(in, mid, c.mlp_bias, group));
      tp_down = register_module("down_proj", RowParallelLinear(mid, in, c.mlp_bias, group));
      return;
    }
    if (c.fused_projections) {  // Phi-3: gate and up as one Linear, the gate first
      gate_up_proj = register_module("gate_up_proj",
                                     linear(c.hidden_size, 2 * c.intermediate_size, c.mlp_bias));
    } else {
      gate_proj =
          register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
      up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
    }
    down_proj =
        register_module("down_proj", linear(c.intermediate_size, c.hidden_size, c.mlp_bias));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor gate, up;
    if (tp_gate) {
      gate = tp_gate(x);
      up = tp_up(x);
    } else if (gate_up_proj) {
      const torch::Tensor both = project(gate_up_proj, x);
      const int64_t n = both.size(-1) / 2;
      gate = both.narrow(-1, 0, n);
      up = both.narrow(-1, n, n);
    } else {
      gate = project(gate_proj, x);
      up = project(up_proj, x);
    }
    // SwiGLU; Gemma's GeGLU with the tanh GELU
    const torch::Tensor act = gelu_tanh_ ? torch::gelu(gate, "tanh") : torch::silu(gate);
    return tp_down ? tp_down(act * up) : project(down_proj, act * up);
  }
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  ColumnParallelLinear tp_gate{nullptr}, tp_up{nullptr};  ///< tensor parallel
  RowParallelLinear tp_down{nullptr};
  torch::nn::Linear gate_up_proj{nullptr};  ///< Phi-3's, in place of gate/up_proj

 private:
  bool gelu_tanh_;
};
TORCH_MODULE(LlamaMlp);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  LlamaBlockImpl(const LlamaConfig& c, const std::shared_ptr<ProcessGroup>& group) {
    auto norm = [&c] { return RmsNorm(c.hidden_size, c.rms_norm_eps, c.norm_plus_one); };
    self_attn = register_module("self_attn", LlamaAttention(c, group));
    mlp = register_module("mlp", LlamaMlp(c, group));
    input_layernorm = register_module("input_layernorm", norm());
    post_attention_layernorm = register_module("post_attention_layernorm", norm());
    if (c.sandwich_norms) {
      pre_feedforward_layernorm = register_module("pre_feedforward_layernorm", norm());
      post_feedforward_layernorm = register_module("post_feedforward_layernorm", norm());
    }
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const TokenLayout& layout, size_t block) {
    const torch::Tensor attended =
        self_attn->forward(input_layernorm->forward(x), cos, sin, layout, block);
    if (!pre_feedforward_layernorm) {  // Llama: post_attention_layernorm is the MLP's input norm
      x = x + attended;
      return x + mlp->forward(post_attention_layernorm->forward(x));
    }
    // Gemma 2/3: each sublayer's output normed before the residual, the MLP's input too.
    x = x + post_attention_layernorm->forward(attended);
    return x +
           post_feedforward_layernorm->forward(mlp->forward(pre_feedforward_layernorm->forward(x)));
  }
  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
  RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  RmsNorm pre_feedforward_layernorm{nullptr}, post_feedforward_layernorm{nullptr};  ///< Gemma 2/3
};
TORCH_MODULE(LlamaBlock);

/// LlamaPreTrainedModel._init_weights: linear and embedding weights N(0, initializer_range),
/// biases zero, norms one (as built), the padding row of the embeddings zero.
/// A layer cut over a tensor group draws its whole weight as one process would and keeps its
/// part: the same model whatever the split.
void initialise(torch::nn::Module& piece, const LlamaConfig& c) {
  torch::NoGradGuard no_grad;
  const double std = c.initializer_range;
  auto whole = [std](const torch::Tensor& part, int64_t dim, int parts) {
    std::vector<int64_t> shape(part.sizes().begin(), part.sizes().end());
    shape[size_t(dim)] *= parts;
    return torch::empty(shape, part.options()).normal_(0.0, std);
  };
  piece.apply([&](torch::nn::Module& m) {
    if (auto* l = m.as<torch::nn::Linear>()) {
      l->weight.normal_(0.0, std);
      if (l->bias.defined()) l->bias.zero_();
    } else if (auto* e = m.as<torch::nn::Embedding>()) {
      e->weight.normal_(0.0, std);
      if (auto pad = e->options.padding_idx()) e->weight[*pad].zero_();
    } else if (auto* col = m.as<ColumnParallelLinearImpl>()) {
      const torch::Tensor w = whole(col->weight, 0, col->parts());
      col->load_full(w, col->bias.defined() ? torch::zeros({w.size(0)}) : torch::Tensor());
    } else if (auto* row = m.as<RowParallelLinearImpl>()) {
      row->load_full(whole(row->weight, 1, row->parts()),
                     row->bias.defined() ? torch::zeros_like(row->bias) : torch::Tensor());
    } else if (auto* ve = m.as<VocabParallelEmbeddingImpl>()) {
      torch::Tensor table = whole(ve->weight, 0, ve->parts());
      if (c.pad_token_id >= 0 && c.pad_token_id < table.size(0)) table[c.pad_token_id].zero_();
      ve->load_full(table);
    }
  });
}

/// The sizes distributed.tensor_parallel cuts must divide by its T: ConfigError naming the
/// config.json key otherwise; Phi-3's fused projections are refused.
void check_tensor_split(const LlamaConfig& c, int t, const std::string& where) {
  UT_CHECK(!c.fused_projections, where, ": ", c.model_type,
           "'s fused projections (qkv_proj, gate_up_proj) with distributed.tensor_parallel are "
           "not built yet; train it with data parallelism");
  auto check = [&](int64_t n, const char* key) {
    UT_CHECK(n % t == 0, where, ": ", key, " (", n,
             ") is not divisible by "
             "distributed.tensor_parallel (",
             t, "): ", c.model_type, " cuts it over the tensor group; use a T that divides it");
  };
  check(c.num_attention_heads, "num_attention_heads");
  check(c.kv_heads(), "num_key_value_heads");
  check(c.intermediate_size, "intermediate_size");
  check(c.vocab_size, "vocab_size");
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
  body = register_module("model", std::make_shared<torch::nn::Module>());
  // HF's embedding keeps the padding row's gradient zero (nn.Embedding's padding_idx).
  const bool padded = c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size;
  if (tensor_group_) {
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
  if (!c.tie_word_embeddings && tensor_group_) {
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
  if (!tensor_group_) return std::nullopt;
  return VocabSplit{tensor_group_, tp_embed->vocab_start(), config.vocab_size};
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

torch::Tensor LlamaImpl::run(torch::Tensor tokens, const TokenLayout& layout) {
  const bool tied = config.tie_word_embeddings;
  auto first = run_unit(
      0,
      [this, tied](const std::vector<torch::Tensor>& in) {
        if (tp_embed) return std::vector<torch::Tensor>{tp_embed(in[0]), tp_embed->weight};
        std::vector<torch::Tensor> out{embed_tokens->forward(in[0])};
        if (tied)
          out.push_back(units_run_apart() ? embed_tokens->weight.clone() : embed_tokens->weight);
        return out;
      },
      {tokens});
  torch::Tensor x = first[0];
  // Gemma: the embeddings times sqrt(hidden_size), rounded to their dtype first.
  if (config.embed_scale) x = x * torch::tensor(std::sqrt(double(config.hidden_size)), x.options());
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
  for (size_t i = 0; i < layers->size(); ++i) {
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
  std::vector<torch::Tensor> last_in{x};
  if (tied) last_in.push_back(first[1]);
  auto* final_norm = norm->as<RmsNormImpl>();
  return run_unit(
      layers->size() + 1,
      [this, tied, final_norm](const std::vector<torch::Tensor>& in) {
        auto y = final_norm->forward(in[0]);
        // Tensor parallel: this process's vocabulary (a tied head: its rows of the embeddings).
        auto logits = tp_head ? tp_head(y)
                      : tied && tensor_group_
                          ? torch::matmul(tp::copy_to_group(y, tensor_group_), in[1].t())
                      : tied ? torch::matmul(y, in[1].t())
                             : project(lm_head, y);
        if (const double cap = config.final_logit_softcapping; cap > 0) {  // Gemma 2
          logits = torch::tanh(logits / cap) * cap;
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
