// gpt2: GPT2LMHeadModel's computation under its own parameter names.
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>
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

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") return torch::gelu(x);
  if (name == "relu") return torch::relu(x);
  if (name == "silu" || name == "swish") return torch::silu(x);
  return torch::gelu(x, "tanh");  // gelu_new, gelu_pytorch_tanh, gelu_fast: the tanh form
}

/// Under tensor parallelism (`group` of T > 1 processes): c_attn cut by heads (each process's
/// heads / T of q, of k and of v: three blocks), c_proj by its input.
class Gpt2AttentionImpl : public torch::nn::Module {
 public:
  Gpt2AttentionImpl(const Gpt2Config& c, const std::shared_ptr<ProcessGroup>& group)
      : heads_(c.n_head / tp::size_of(group.get())),
        head_dim_(c.n_embd / c.n_head),
        dropout_(c.attn_pdrop),
        resid_dropout_(c.resid_pdrop) {
    const int64_t e = c.n_embd;
    if (tp::building_cut()) {
      tp_attn = register_module("c_attn", ColumnParallelLinear(e, 3 * e, true, group,
                                                               /*gather_output=*/false,
                                                               /*blocks=*/3, /*in_out=*/true));
      tp_proj = register_module("c_proj", RowParallelLinear(e, e, true, group,
                                                            /*input_is_parallel=*/true,
                                                            /*in_out=*/true));
      return;
    }
    c_attn = register_module("c_attn", Conv1D(e, 3 * e));
    c_proj = register_module("c_proj", Conv1D(e, e));
  }
  /// `layout`: the tokens' attention (a KV cache's block `block` when it has one).
  torch::Tensor forward(const torch::Tensor& x, const TokenLayout& layout, size_t block) {
    const int64_t b = x.size(0), t = x.size(1), width = heads_ * head_dim_;
    auto qkv = (tp_attn ? project(tp_attn, x) : project(c_attn, x)).split(width, 2);
    auto heads = [&](const torch::Tensor& m) {
      return m.view({b, t, heads_, head_dim_}).transpose(1, 2);
    };
    auto k = heads(qkv[1]), v = heads(qkv[2]);
    if (layout.cache) std::tie(k, v) = layout.cache->extend(block, k, v);
    // Tensor parallel: this process's heads draw their dropout from its part's stream (or
    // each chunk's: distributed.reproducible_chunks).
    const double dropout = is_training() ? dropout_ : 0.0;
    auto y = tp::attend_heads(tp_attn ? tp_attn.get() : nullptr, {heads(qkv[0]), k, v}, dropout > 0,
                              [&](const std::vector<torch::Tensor>& in) {
                                return layout.attend(in[0], in[1], in[2], dropout);
                              })
                 .transpose(1, 2)
                 .reshape({b, t, width});
    return torch::dropout(tp_proj ? project(tp_proj, y) : project(c_proj, y), resid_dropout_,
                          is_training());
  }
  Conv1D c_attn{nullptr}, c_proj{nullptr};
  ColumnParallelLinear tp_attn{nullptr};  ///< tensor parallel
  RowParallelLinear tp_proj{nullptr};

 private:
  int64_t heads_, head_dim_;
  double dropout_, resid_dropout_;
};
TORCH_MODULE(Gpt2Attention);

/// Under tensor parallelism: c_fc cut by the inner width, c_proj by its input.
class Gpt2MlpImpl : public torch::nn::Module {
 public:
  Gpt2MlpImpl(const Gpt2Config& c, const std::shared_ptr<ProcessGroup>& group)
      : act_(c.activation_function), dropout_(c.resid_pdrop) {
    if (tp::building_cut()) {
      tp_fc = register_module("c_fc", ColumnParallelLinear(c.n_embd, c.inner(), true, group,
                                                           /*gather_output=*/false,
                                                           /*blocks=*/1, /*in_out=*/true));
      tp_proj = register_module("c_proj", RowParallelLinear(c.inner(), c.n_embd, true, group,
                                                            /*input_is_parallel=*/true,
                                                            /*in_out=*/true));
      return;
    }
    c_fc = register_module("c_fc", Conv1D(c.n_embd, c.inner()));
    c_proj = register_module("c_proj", Conv1D(c.inner(), c.n_embd));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    if (tp_fc) {
      auto act = [this](const torch::Tensor& h) { return activation(act_, h); };
      return torch::dropout(
          project(tp_proj, tp::chunkwise(project(tp_fc, x), tp_fc->chunks(), act)), dropout_,
          is_training());
    }
    return torch::dropout(project(c_proj, activation(act_, project(c_fc, x))), dropout_,
                          is_training());
  }
  Conv1D c_fc{nullptr}, c_proj{nullptr};
  ColumnParallelLinear tp_fc{nullptr};  ///< tensor parallel
  RowParallelLinear tp_proj{nullptr};

 private:
  std::string act_;
  double dropout_;
};
TORCH_MODULE(Gpt2Mlp);

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  Gpt2BlockImpl(const Gpt2Config& c, const std::shared_ptr<ProcessGroup>& group) {
    auto norm = [&] {
      return torch::nn::LayerNorm(
          torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon));
    };
    ln_1 = register_module("ln_1", norm());
    attn = register_module("attn", Gpt2Attention(c, group));
    ln_2 = register_module("ln_2", norm());
    mlp = register_module("mlp", Gpt2Mlp(c, group));
  }
  torch::Tensor forward(torch::Tensor x, const TokenLayout& layout, size_t block) {
    x = x + attn->forward(ln_1->forward(x), layout, block);
    return x + mlp->forward(ln_2->forward(x));
  }
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Gpt2Attention attn{nullptr};
  Gpt2Mlp mlp{nullptr};
};
TORCH_MODULE(Gpt2Block);

/// GPT2PreTrainedModel._init_weights: N(0, initializer_range) for weights, zero biases, unit
/// LayerNorms, and each block's output projections N(0, initializer_range / sqrt(2 n_layer)).
/// A layer cut over a tensor group draws its whole weight as one process would and keeps its
/// part: the same model whatever the split.
void initialise(torch::nn::Module& piece, const Gpt2Config& c) {
  torch::NoGradGuard no_grad;
  const double scaled = c.initializer_range / std::sqrt(2.0 * double(c.n_layer));
  auto init = [&](const std::string& name, torch::nn::Module& m) {
    const double std = ends_with(name, "c_proj") ? scaled : c.initializer_range;
    if (tp::init_normal(m, std)) return;
    const bool norm = name.find("ln_") != std::string::npos;
    for (auto& p : m.named_parameters(/*recurse=*/false)) {
      torch::Tensor t = p.value();
      if (p.key() == "bias") {
        t.zero_();
      } else if (norm) {
        t.fill_(1.0);
      } else {
        t.normal_(0.0, std);
      }
    }
  };
  init("", piece);
  for (const auto& m : piece.named_modules("", /*include_self=*/false)) init(m.key(), *m.value());
}

/// The sizes distributed.tensor_parallel cuts must divide by its T: ConfigError naming the
/// config.json key otherwise. (The vocabulary is cut as evenly as it goes: 50257 over 2.)
void check_tensor_split(const Gpt2Config& c, int64_t t, const std::string& where,
                        const char* by = "distributed.tensor_parallel") {
  auto check = [&](int64_t n, const char* key) {
    UT_CHECK(n % t == 0, where, ": ", key, " (", n, ") is not divisible by ", by, " (", t,
             "): gpt2 cuts it over the tensor group; use a T that divides it");
  };
  check(c.n_head, "n_head");
  check(c.inner(), c.n_inner > 0 ? "n_inner" : "4 x n_embd (n_inner)");
}

/// The family's tensor names: the hub's gpt2 files name GPT2Model's tensors (no
/// "transformer."), save_pretrained's GPT2LMHeadModel's.
std::string gpt2_model_name(const std::string& name, bool tied) {
  // The old causal-mask buffers (attn.bias [1, 1, P, P], attn.masked_bias) are not weights.
  if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) return "";
  if (name == "lm_head.weight") return tied ? "" : name;
  if (name.rfind("transformer.", 0) == 0) return name;
  return "transformer." + name;
}

const HfFamily kGpt2Family{"gpt2", &gpt2_model_name};

}  // namespace

ConfigShape Gpt2Impl::shape_of(const Gpt2Config& c, const std::string& path) {
  ConfigShape s{"gpt2", path, "n_layer", c.n_layer, "transformer.h.", {}};
  const int64_t e = c.n_embd, v = c.vocab_size, inner = c.inner();
  const std::string embd = fmt::format("n_embd {}", e);
  const std::string inner_keys = c.n_inner > 0 ? fmt::format("n_embd {}, n_inner {}", e, inner)
                                               : fmt::format("n_embd {}, n_inner 4 n_embd", e);
  auto add = [&s](std::string name, std::vector<int64_t> shape, const std::string& keys) {
    s.tensors.push_back({std::move(name), std::move(shape), keys});
  };
  add("transformer.wte.weight", {v, e}, fmt::format("vocab_size {}, {}", v, embd));
  add("transformer.wpe.weight", {c.n_positions, e},
      fmt::format("n_positions {}, {}", c.n_positions, embd));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = fmt::format("transformer.h.{}.", i);
    for (const char* norm : {"ln_1", "ln_2"}) {
      add(p + norm + ".weight", {e}, embd);
      add(p + norm + ".bias", {e}, embd);
    }
    add(p + "attn.c_attn.weight", {e, 3 * e}, embd);
    add(p + "attn.c_attn.bias", {3 * e}, embd);
    add(p + "attn.c_proj.weight", {e, e}, embd);
    add(p + "attn.c_proj.bias", {e}, embd);
    add(p + "mlp.c_fc.weight", {e, inner}, inner_keys);
    add(p + "mlp.c_fc.bias", {inner}, inner_keys);
    add(p + "mlp.c_proj.weight", {inner, e}, inner_keys);
    add(p + "mlp.c_proj.bias", {e}, embd);
  }
  add("transformer.ln_f.weight", {e}, embd);
  add("transformer.ln_f.bias", {e}, embd);
  if (!c.tie_word_embeddings) {
    add("lm_head.weight", {v, e},
        fmt::format("vocab_size {}, {}, tie_word_embeddings false", v, embd));
  }
  return s;
}

Gpt2Impl::Gpt2Impl(const HfModelOptions& options)
    : HfCausalLm("gpt2"), config(read_gpt2_config(options.config_path("model.args."))) {
  const Gpt2Config& c = config;
  const bool fresh = options.pretrained.empty();
  const bool tied = c.tie_word_embeddings;
  info_.family = &kGpt2Family;
  info_.model_name = [tied](const std::string& name) { return gpt2_model_name(name, tied); };
  // Before a tensor is allocated: config.json's sizes against the weights' headers.
  check_config_shape(shape_of(c, options.config_path("model.args.")), options.pretrained,
                     info_.model_name);
  const std::string own_generation = generation_config_json({c.bos_token_id}, {c.eos_token_id});
  info_.generation_config_json =
      fresh ? own_generation
            : read_generation_config(options.pretrained, c.vocab_size, own_generation);
  info_.pretrained = options.pretrained;
  info_.config_json = c.json;

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
  transformer = register_module("transformer", std::make_shared<torch::nn::Module>());
  // Built a unit (of units()) at a time, each handed to unit_built: ZeRO 3's parts.
  torch::nn::Module* token_table = nullptr;
  if (cut_) {
    tp_wte = transformer->register_module(
        "wte", VocabParallelEmbedding(c.vocab_size, c.n_embd, tensor_group_));
    token_table = tp_wte.get();
  } else {
    wte = transformer->register_module("wte", torch::nn::Embedding(c.vocab_size, c.n_embd));
    token_table = wte.get();
  }
  wpe = transformer->register_module("wpe", torch::nn::Embedding(c.n_positions, c.n_embd));
  if (fresh) {
    initialise(*token_table, c);
    initialise(*wpe, c);
  }
  unit_built({token_weight(), wpe->weight});
  h = transformer->register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) {
    Gpt2Block block(c, tensor_group_);
    if (fresh) initialise(*block, c);
    unit_built(block->parameters());
    h->push_back(block);
  }
  ln_f = transformer->register_module(
      "ln_f",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon)));
  std::vector<torch::Tensor> last = ln_f->parameters();
  if (!c.tie_word_embeddings && cut_) {
    tp_head = register_module("lm_head",
                              ColumnParallelLinear(c.n_embd, c.vocab_size, false, tensor_group_));
    if (fresh) tp::init_normal(*tp_head, c.initializer_range);
    last.push_back(tp_head->weight);
  } else if (!c.tie_word_embeddings) {
    lm_head = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(c.n_embd, c.vocab_size).bias(false)));
    if (fresh) {
      torch::NoGradGuard no_grad;
      lm_head->weight.normal_(0.0, c.initializer_range);
    }
    last.push_back(lm_head->weight);
  }
  unit_built(last);
}

const torch::Tensor& Gpt2Impl::token_weight() const {
  return tp_wte ? tp_wte->weight : wte->weight;
}

std::optional<VocabSplit> Gpt2Impl::vocab_split() const {
  if (!cut_) return std::nullopt;
  return VocabSplit{tensor_group_, tp_wte->vocab_start(), config.vocab_size,
                    tp_head ? tp_head->chunks() : tp_wte->chunks()};
}

torch::Tensor Gpt2Impl::checked(torch::Tensor tokens) const {
  return checked_tokens("gpt2", tokens, config.n_positions, "n_positions", config.vocab_size);
}

torch::Tensor Gpt2Impl::run(torch::Tensor tokens, const TokenLayout& layout) {
  return run_units(std::move(tokens), layout, 0, h->size() + 2, {});
}

std::vector<std::pair<size_t, torch::Tensor>> Gpt2Impl::borrowed_parameters() {
  if (!config.tie_word_embeddings) return {};
  return {{h->size() + 1, token_weight()}};
}

torch::Tensor Gpt2Impl::run_units(torch::Tensor tokens, const TokenLayout& layout, size_t first,
                                  size_t end, torch::Tensor x) {
  const bool tied = config.tie_word_embeddings;
  const size_t count = h->size();
  // The embeddings' unit hands the head its weight when tied (a copy when units run apart:
  // ZeRO 3 frees the gathered weight once the unit has run; the gradient flows back through it).
  std::vector<torch::Tensor> first_out;
  if (first == 0) {
    first_out =
        run_unit(0,
                 [this, tied, layout](const std::vector<torch::Tensor>& in) {
                   const torch::Tensor& ids = in[0];
                   const torch::Tensor tokens = tp_wte ? tp_wte(ids) : wte->forward(ids);
                   auto e = torch::dropout(tokens + wpe->forward(layout.positions),
                                           config.embd_pdrop, is_training());
                   std::vector<torch::Tensor> out{e};
                   if (tied) {
                     out.push_back(units_run_apart() ? token_weight().clone() : token_weight());
                   }
                   return out;
                 },
                 {tokens});
    x = first_out[0];
  }
  for (size_t i = std::max<size_t>(first, 1) - 1; i < count && i + 1 < end; ++i) {
    auto block = h->ptr<Gpt2BlockImpl>(i);
    const bool recompute = recomputes(i);
    x = run_unit(
        1 + i,
        [block, layout, i](const torch::Tensor& in) { return block->forward(in, layout, i); }, x,
        recompute);
  }
  if (end < count + 2) return x;
  std::vector<torch::Tensor> last_in{x};
  // A tied head on a pipeline's last stage: the embeddings it holds beside the first stage.
  if (tied) last_in.push_back(!first_out.empty() ? first_out[1] : token_weight());
  return run_unit(
      count + 1,
      [this, tied](const std::vector<torch::Tensor>& in) {
        auto y = ln_f->forward(in[0]);
        // Tensor parallel: this process's vocabulary (a tied head: its rows of the embeddings).
        if (tp_head) return std::vector{project(tp_head, y)};
        if (tied && cut_) {
          return std::vector{tp::column_product(y, in[1], tensor_group_, tp_wte->chunks())};
        }
        return std::vector{tied ? torch::matmul(y, in[1].t()) : project(lm_head, y)};
      },
      last_in)[0];
}

std::vector<std::vector<torch::Tensor>> Gpt2Impl::units() {
  std::vector<std::vector<torch::Tensor>> out;
  out.push_back({token_weight(), wpe->weight});
  for (const auto& block : *h) out.push_back(block->parameters());
  std::vector<torch::Tensor> last = ln_f->parameters();
  if (lm_head) last.push_back(lm_head->weight);
  if (tp_head) last.push_back(tp_head->weight);
  out.push_back(std::move(last));
  return out;
}

void register_gpt2() {
  register_declared_model<HfModelOptions, Gpt2Impl>(
      "gpt2",
      "GPT-2 causal LM from a Hugging Face folder (args.pretrained) or config.json "
      "(args.config), Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
  register_hf_family(kGpt2Family);
}

}  // namespace unitrain::models
