// The parameters a llama-shaped config.json gives (names as the family's files have them, shapes,
// the keys that set each), checked against a folder's weights before anything is built.
#include <fmt/format.h>

#include <tuple>

#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {

ConfigShape LlamaImpl::shape_of(const LlamaConfig& c, const std::string& path) {
  ConfigShape s{c.model_type, path, "num_hidden_layers", c.num_hidden_layers, "model.layers.", {}};
  const int64_t h = c.hidden_size, v = c.vocab_size, n = c.intermediate_size, d = c.head_width();
  const int64_t q = c.num_attention_heads * d, kv = c.kv_heads() * d;
  const std::string hidden = fmt::format("hidden_size {}", h);
  const std::string width = c.head_dim > 0 ? fmt::format("head_dim {}", d)
                                           : fmt::format("{} / num_attention_heads", hidden);
  const std::string q_keys =
      fmt::format("num_attention_heads {}, {}, {}", c.num_attention_heads, width, hidden);
  const std::string kv_keys =
      fmt::format("num_key_value_heads {}, {}, {}", c.kv_heads(), width, hidden);
  const std::string mlp = fmt::format("intermediate_size {}, {}", n, hidden);
  const std::string qkv_keys = fmt::format("num_attention_heads {}, num_key_value_heads {}, {}, {}",
                                           c.num_attention_heads, c.kv_heads(), width, hidden);
  auto add = [&s](std::string name, std::vector<int64_t> shape, const std::string& keys) {
    s.tensors.push_back({std::move(name), std::move(shape), keys});
  };
  add("model.embed_tokens.weight", {v, h}, fmt::format("vocab_size {}, {}", v, hidden));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    std::vector<std::tuple<const char*, int64_t, int64_t, const std::string*, bool>> linears;
    if (c.fused_projections) {
      linears = {{"self_attn.qkv_proj", q + 2 * kv, h, &qkv_keys, c.qkv_bias},
                 {"self_attn.o_proj", h, q, &q_keys, c.o_bias},
                 {"mlp.gate_up_proj", 2 * n, h, &mlp, c.mlp_bias},
                 {"mlp.down_proj", h, n, &mlp, c.mlp_bias}};
    } else {
      linears = {{"self_attn.q_proj", q, h, &q_keys, c.qkv_bias},
                 {"self_attn.k_proj", kv, h, &kv_keys, c.qkv_bias},
                 {"self_attn.v_proj", kv, h, &kv_keys, c.qkv_bias},
                 {"self_attn.o_proj", h, q, &q_keys, c.o_bias},
                 {"mlp.gate_proj", n, h, &mlp, c.mlp_bias},
                 {"mlp.up_proj", n, h, &mlp, c.mlp_bias},
                 {"mlp.down_proj", h, n, &mlp, c.mlp_bias}};
    }
    for (const auto& [name, out, in, keys, bias] : linears) {
      add(p + name + ".weight", {out, in}, *keys);
      if (bias) add(p + name + ".bias", {out}, *keys);
    }
    if (c.qk_norm) {
      add(p + "self_attn.q_norm.weight", {d}, width);
      add(p + "self_attn.k_norm.weight", {d}, width);
    }
    add(p + "input_layernorm.weight", {h}, hidden);
    add(p + "post_attention_layernorm.weight", {h}, hidden);
    if (c.sandwich_norms) {
      add(p + "pre_feedforward_layernorm.weight", {h}, hidden);
      add(p + "post_feedforward_layernorm.weight", {h}, hidden);
    }
  }
  add("model.norm.weight", {h}, hidden);
  if (!c.tie_word_embeddings) {
    add("lm_head.weight", {v, h},
        fmt::format("vocab_size {}, {}, tie_word_embeddings false", v, hidden));
  }
  return s;
}

}  // namespace unitrain::models
