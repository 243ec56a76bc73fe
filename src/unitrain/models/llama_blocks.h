#pragma once
// Llama's layers (RMSNorm, attention, MLP, block) and its initialisation: llama.cpp's pieces, not
// part of the public API. Each layer built inside a tensor group (distributed.tensor_parallel)
// holds this process's part.
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <optional>
#include <tuple>

#include "unitrain/models/llama_config.h"
#include "unitrain/models/lora.h"
#include "unitrain/models/token_layout.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain::models::llama_blocks {

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

inline torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

/// Hugging Face's rotate_half: [x1, x2] -> [-x2, x1] over the last dimension's halves.
inline torch::Tensor rotate_half(const torch::Tensor& x) {
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
    if (tp::building_cut()) {  // cut over the tensor group (the fused Phi-3's refused before)
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
    if (!tp_o) o_proj = register_module("o_proj", linear(heads_ * hd, c.hidden_size, c.o_bias));
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
      q = heads(project(tp_q, x));
      k = heads(project(tp_k, x));
      v = heads(project(tp_v, x));
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
    auto attend = [&](const std::vector<torch::Tensor>& in) {
      return softcap_ > 0 || scale_ > 0
                 ? layout.attend_eager(in[0], in[1], in[2], dropout,
                                       scale_ > 0 ? scale_ : 1.0 / std::sqrt(double(head_dim_)),
                                       softcap_)
                 : layout.attend(in[0], in[1], in[2], dropout);
    };
    // Tensor parallel: this process's heads draw their dropout from its part's stream (or
    // each chunk's, their heads apart: distributed.reproducible_chunks).
    auto y = tp::attend_heads(tp_q ? tp_q.get() : nullptr, {q, k, v}, dropout > 0, attend);
    const torch::Tensor joined = y.transpose(1, 2).reshape({b, t, heads_ * head_dim_});
    return tp_o ? project(tp_o, joined) : project(o_proj, joined);
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
    if (tp::building_cut()) {
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
      gate = project(tp_gate, x);
      up = project(tp_up, x);
    } else if (gate_up_proj) {
      const torch::Tensor both = project(gate_up_proj, x);
      const int64_t n = both.size(-1) / 2;
      gate = both.narrow(-1, 0, n);
      up = both.narrow(-1, n, n);
    } else {
      gate = project(gate_proj, x);
      up = project(up_proj, x);
    }
    // SwiGLU; Gemma's GeGLU with the tanh GELU (chunked: chunk by chunk)
    auto glu = [this](const std::vector<torch::Tensor>& in) {
      return (gelu_tanh_ ? torch::gelu(in[0], "tanh") : torch::silu(in[0])) * in[1];
    };
    const torch::Tensor mixed = tp::chunkwise({gate, up}, -1, tp_gate ? tp_gate->chunks() : 0, glu);
    return tp_down ? project(tp_down, mixed) : project(down_proj, mixed);
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
inline void initialise(torch::nn::Module& piece, const LlamaConfig& c) {
  torch::NoGradGuard no_grad;
  const double std = c.initializer_range;
  piece.apply([std](torch::nn::Module& m) {
    if (auto* l = m.as<torch::nn::Linear>()) {
      l->weight.normal_(0.0, std);
      if (l->bias.defined()) l->bias.zero_();
    } else if (auto* e = m.as<torch::nn::Embedding>()) {
      e->weight.normal_(0.0, std);
      if (auto pad = e->options.padding_idx()) e->weight[*pad].zero_();
    } else {
      tp::init_normal(m, std);
    }
  });
}

}  // namespace unitrain::models::llama_blocks
