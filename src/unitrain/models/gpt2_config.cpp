#include "unitrain/models/gpt2_config.h"

#include <nlohmann/json.hpp>
#include <set>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/json_excerpt.h"
#include "unitrain/models/hf_config_file.h"

namespace unitrain::models {

Gpt2Config read_gpt2_config(const std::string& path) {
  ConfigFile f(path, "gpt2");
  Gpt2Config c;
  c.json = f.text();
  f.integer("vocab_size", c.vocab_size, 1, kMaxVocab);
  f.integer("n_positions", c.n_positions, 1, kMaxPositions);
  f.integer("n_embd", c.n_embd, 1, kMaxWidth);
  f.integer("n_layer", c.n_layer, 1, kMaxLayers);
  f.integer("n_head", c.n_head, 1, kMaxHeads);
  f.integer("n_inner", c.n_inner, 1, kMaxInner, /*nullable=*/true);
  f.text("activation_function", c.activation_function);
  static const std::set<std::string> kActivations = {
      "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu", "relu", "silu", "swish"};
  UT_CHECK(kActivations.count(c.activation_function), f.where("activation_function"), " is '",
           text_excerpt(c.activation_function),
           "'; gpt2 computes gelu_new (tanh GELU), "
           "gelu_pytorch_tanh, gelu_fast, gelu, relu and silu");
  f.number("resid_pdrop", c.resid_pdrop, 0, 0.999);
  f.number("embd_pdrop", c.embd_pdrop, 0, 0.999);
  f.number("attn_pdrop", c.attn_pdrop, 0, 0.999);
  f.number("layer_norm_epsilon", c.layer_norm_epsilon, 0, 1, /*above_min=*/true);
  f.number("initializer_range", c.initializer_range, 0, 10);
  f.boolean("tie_word_embeddings", c.tie_word_embeddings);
  std::vector<int64_t> bos, eos;
  f.ids("bos_token_id", bos, c.vocab_size);
  f.ids("eos_token_id", eos, c.vocab_size);
  if (!bos.empty()) c.bos_token_id = bos.front();
  if (!eos.empty()) c.eos_token_id = eos.front();
  UT_CHECK(c.n_embd % c.n_head == 0, f.where("n_embd"), " (", c.n_embd,
           ") must be a multiple of n_head (", c.n_head, ")");
  f.refuse_unless("scale_attn_weights", true, "gpt2 always scales attention by 1/sqrt(head_dim)");
  f.refuse_unless("scale_attn_by_inverse_layer_idx", false,
                  "gpt2 does not scale attention by the layer's index");
  f.refuse_unless("reorder_and_upcast_attn", false,
                  "gpt2 does not reorder the attention's product (set it false: in float32 it "
                  "changes nothing)");
  f.refuse_unless("add_cross_attention", false, "gpt2 is decoder-only (no cross-attention)");
  f.refuse_unless("pruned_heads", nlohmann::json::object(), "gpt2 does not prune attention heads");
  f.harmless_common();
  f.harmless({"n_ctx", "bos_token_id", "eos_token_id", "summary_type", "summary_use_proj",
              "summary_activation", "summary_proj_to_labels", "summary_first_dropout"});
  f.warn_unknown("gpt2");
  return c;
}

}  // namespace unitrain::models
