#include "unitrain/models/transformer_lm.h"

#include <fmt/format.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>

#include "unitrain/core/error.h"
#include "unitrain/core/unit_parts.h"
#include "unitrain/models/activation_checkpoint.h"
#include "unitrain/models/lora.h"
#include "unitrain/models/model_checks.h"
#include "unitrain/models/token_layout.h"
#include "unitrain/models/torchscript_export.h"

namespace unitrain::models {
namespace {

/// Multi-head self-attention where position t attends to positions 0..t only. Over a tensor
/// group of T processes each computes heads / T of the heads.
class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(int64_t d_model, int64_t heads, double dropout,
                          const std::shared_ptr<ProcessGroup>& group)
      : heads_(heads / tp::size_of(group.get())), head_dim_(d_model / heads), dropout_(dropout) {
    if (tp::building_cut()) {
      tp_qkv = register_module("qkv", ColumnParallelLinear(d_model, 3 * d_model, true, group,
                                                           /*gather_output=*/false, /*blocks=*/3));
      tp_out = register_module("out", RowParallelLinear(d_model, d_model, true, group));
      return;
    }
    qkv = register_module("qkv", torch::nn::Linear(d_model, 3 * d_model));
    out = register_module("out", torch::nn::Linear(d_model, d_model));
  }

  torch::Tensor forward(const torch::Tensor& x, const TokenLayout& layout) {  // [B, T, C]
    const int64_t b = x.size(0), t = x.size(1), c = heads_ * head_dim_;
    // [B, T, 3, H, D] -> [3, B, H, T, D] (H this process's heads)
    auto qkv_heads = (tp_qkv ? project(tp_qkv, x) : project(qkv, x))
                         .view({b, t, 3, heads_, head_dim_})
                         .permute({2, 0, 3, 1, 4});
    // Tensor parallel: this process's heads draw their dropout from its part's stream (or
    // each chunk's: distributed.reproducible_chunks).
    const double dropout = is_training() ? dropout_ : 0.0;
    auto y = tp::attend_heads(tp_qkv ? tp_qkv.get() : nullptr,
                              {qkv_heads[0], qkv_heads[1], qkv_heads[2]}, dropout > 0,
                              [&](const std::vector<torch::Tensor>& in) {
                                return layout.attend(in[0], in[1], in[2], dropout);
                              })
                 .transpose(1, 2)
                 .reshape({b, t, c});
    y = tp_out ? project(tp_out, y) : project(out, y);
    return dropout_ > 0 ? torch::dropout(y, dropout_, is_training()) : y;
  }

  torch::nn::Linear qkv{nullptr}, out{nullptr};
  ColumnParallelLinear tp_qkv{nullptr};
  RowParallelLinear tp_out{nullptr};

 private:
  int64_t heads_, head_dim_;
  double dropout_;
};
TORCH_MODULE(CausalSelfAttention);

/// Linear(d, ff) -> GELU -> Linear(ff, d) -> dropout.
class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t d_model, int64_t width, double dropout,
                  const std::shared_ptr<ProcessGroup>& group)
      : dropout_(dropout) {
    if (tp::building_cut()) {
      tp_fc = register_module("fc", ColumnParallelLinear(d_model, width, true, group));
      tp_proj = register_module("proj", RowParallelLinear(width, d_model, true, group));
      return;
    }
    fc = register_module("fc", torch::nn::Linear(d_model, width));
    proj = register_module("proj", torch::nn::Linear(width, d_model));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto gelu = [](const torch::Tensor& h) { return torch::gelu(h); };
    auto y = tp_fc ? project(tp_proj, tp::chunkwise(project(tp_fc, x), tp_fc->chunks(), gelu))
                   : project(proj, torch::gelu(project(fc, x)));
    return dropout_ > 0 ? torch::dropout(y, dropout_, is_training()) : y;
  }
  torch::nn::Linear fc{nullptr}, proj{nullptr};
  ColumnParallelLinear tp_fc{nullptr};
  RowParallelLinear tp_proj{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(FeedForward);

/// A pre-norm transformer block.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const TransformerLmOptions& o, const std::shared_ptr<ProcessGroup>& group) {
    const int64_t d = o.d_model();
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    attention = register_module("attention", CausalSelfAttention(d, o.heads(), o.dropout(), group));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    feed_forward =
        register_module("feed_forward", FeedForward(d, o.ff_mult() * d, o.dropout(), group));
  }
  torch::Tensor forward(torch::Tensor x, const TokenLayout& layout) {
    x = x + attention->forward(norm1->forward(x), layout);
    return x + feed_forward->forward(norm2->forward(x));
  }
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  CausalSelfAttention attention{nullptr};
  FeedForward feed_forward{nullptr};
};
TORCH_MODULE(Block);

/// GPT-2's initialisation of `piece`: linear and embedding weights N(0, 0.02), biases 0. A
/// layer cut over a tensor group draws its full weight as one process would and keeps its part
/// (the same model whatever the split).
void initialise(torch::nn::Module& piece) {
  torch::NoGradGuard no_grad;
  piece.apply([](torch::nn::Module& m) {
    if (auto* linear = m.as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, 0.02);
      linear->bias.zero_();
    } else if (auto* embedding = m.as<torch::nn::Embedding>()) {
      embedding->weight.normal_(0.0, 0.02);
    } else {
      tp::init_normal(m, 0.02);
    }
  });
}

}  // namespace

void TransformerLmOptions::declare(Options<TransformerLmOptions>& o) {
  using T = TransformerLmOptions;
  o.field("vocab", &T::vocab_)
      .required()
      .gt(0)
      .help("vocabulary size: token ids are in [0, vocab)");
  o.field("d_model", &T::d_model_).min(1).help("embedding width; a multiple of heads");
  o.field("layers", &T::layers_).min(1).help("number of transformer blocks");
  o.field("heads", &T::heads_).min(1).help("attention heads; must divide d_model");
  o.field("seq_len", &T::seq_len_).min(1).help("maximum context length (learned positions)");
  o.field("dropout", &T::dropout_)
      .min(0)
      .max(1)
      .help("dropout on embeddings, attention weights and residual branches, < 1");
  o.field("ff_mult", &T::ff_mult_).min(1).help("feed-forward width = ff_mult * d_model");
  o.check([](T& m, const Config& c) { m.validate(c.path().empty() ? "" : c.path() + "."); });
}

void TransformerLmOptions::validate(const std::string& p) const {
  UT_CHECK(vocab_ > 0, p, "vocab must be > 0, got ", vocab_);
  UT_CHECK(d_model_ > 0, p, "d_model must be > 0, got ", d_model_);
  UT_CHECK(layers_ > 0, p, "layers must be > 0, got ", layers_);
  UT_CHECK(heads_ > 0, p, "heads must be > 0, got ", heads_);
  UT_CHECK(d_model_ % heads_ == 0, p, "d_model (", d_model_, ") must be a multiple of ", p,
           "heads (", heads_, "); e.g. d_model ", (d_model_ / heads_ + 1) * heads_);
  UT_CHECK(seq_len_ > 0, p, "seq_len must be > 0, got ", seq_len_);
  UT_CHECK(ff_mult_ > 0, p, "ff_mult must be > 0, got ", ff_mult_);
  UT_CHECK(dropout_ >= 0 && dropout_ < 1, p, "dropout must be in [0, 1), got ", dropout_);
}

namespace {

/// Refuses a split the model's sizes do not allow, naming the key.
/// `by`: the key that cuts them t ways (distributed.tensor_parallel, or reproducible_chunks).
void check_tensor_split(const TransformerLmOptions& o, int64_t t,
                        const char* by = "distributed.tensor_parallel") {
  auto check = [t, by](int64_t n, const char* key) {
    UT_CHECK(n % t == 0, "model.args.", key, " (", n, ") is not divisible by ", by, " (", t,
             "): transformer_lm cuts it over the tensor group; give a multiple of ", t);
  };
  check(o.heads(), "heads");  // (the vocabulary is cut as evenly as it goes: tp::part_range)
  UT_CHECK((o.ff_mult() * o.d_model()) % t == 0, "model.args.ff_mult x d_model (",
           o.ff_mult() * o.d_model(), ") is not divisible by ", by, " (", t, ")");
}

}  // namespace

TransformerLmImpl::TransformerLmImpl(TransformerLmOptions options_)
    : options(std::move(options_)), tensor_group_(tp::building_group()) {
  options.validate();
  const int t = tp::size_of(tensor_group_.get());
  if (t > 1) check_tensor_split(options, t);
  if (const int64_t c = tp::building_chunks()) {
    check_tensor_split(options, c, "distributed.reproducible_chunks");
  }
  if (t == 1) tensor_group_ = nullptr;
  cut_ = tp::building_cut();  // (distributed.reproducible_chunks: parallel layers on one too)
  const int64_t d = options.d_model();
  // Built and initialised a unit (of units()) at a time, each handed to unit_built: a model
  // built in parts for ZeRO 3 (core/unit_parts.h) never holds more than one unit whole.
  torch::Tensor token_weight;
  if (cut_) {
    tp_token_embedding = register_module("token_embedding",
                                         VocabParallelEmbedding(options.vocab(), d, tensor_group_));
    initialise(*tp_token_embedding);
    token_weight = tp_token_embedding->weight;
  } else {
    token_embedding = register_module("token_embedding", torch::nn::Embedding(options.vocab(), d));
    initialise(*token_embedding);
    token_weight = token_embedding->weight;
  }
  position_embedding =
      register_module("position_embedding", torch::nn::Embedding(options.seq_len(), d));
  initialise(*position_embedding);
  unit_built({token_weight, position_embedding->weight});
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.layers(); ++i) {
    Block block(options, tensor_group_);
    initialise(*block);
    unit_built(block->parameters());
    blocks->push_back(block);
  }
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  std::vector<torch::Tensor> last = norm->parameters();
  if (cut_) {
    tp_head =
        register_module("head", ColumnParallelLinear(d, options.vocab(), true, tensor_group_));
    initialise(*tp_head);
    for (const auto& p : tp_head->parameters()) last.push_back(p);
  } else {
    head = register_module("head", torch::nn::Linear(d, options.vocab()));
    initialise(*head);
    for (const auto& p : head->parameters()) last.push_back(p);
  }
  unit_built(last);
}

std::optional<VocabSplit> TransformerLmImpl::vocab_split() const {
  if (!cut_) return std::nullopt;
  return VocabSplit{tensor_group_, tp_token_embedding->vocab_start(), options.vocab(),
                    tp_head->chunks()};
}

torch::Tensor TransformerLmImpl::forward(torch::Tensor tokens) {
  tokens = checked(tokens);
  return run(tokens, TokenLayout::causal(tokens.size(1), tokens.device()));
}

torch::Tensor TransformerLmImpl::forward(torch::Tensor tokens, const torch::Tensor& segments) {
  tokens = checked(tokens);
  return run(tokens, TokenLayout::packed(segments, tokens, "transformer_lm"));
}

torch::Tensor TransformerLmImpl::checked(torch::Tensor tokens) const {
  UT_CHECK(tokens.dim() == 2 && !tokens.is_floating_point() && !tokens.is_complex(),
           "transformer_lm: expected integer token ids of shape [batch, time], got ",
           tokens.scalar_type(), " of shape ", shape_string(tokens));
  const int64_t t = tokens.size(1);
  UT_CHECK(t >= 1 && t <= options.seq_len(),
           "transformer_lm: expected at most seq_len = ", options.seq_len(),
           " tokens per sequence, got shape ", shape_string(tokens),
           "; raise model.args.seq_len or cut the sequences shorter");
  if (tokens.numel() > 0) {
    const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
    UT_CHECK(lo >= 0 && hi < options.vocab(),
             "transformer_lm: token ids must be in [0, vocab = ", options.vocab(),
             "), got ids from ", lo, " to ", hi);
  }
  return tokens.to(torch::kLong);
}

torch::Tensor TransformerLmImpl::run(const torch::Tensor& tokens, const TokenLayout& layout,
                                     size_t first, size_t end, torch::Tensor x) {
  // Each piece runs as a unit of units() (ZeRO stage 3 gathers its parameters around it).
  const size_t layers = blocks->size();
  end = std::min(end, layers + 2);
  if (first == 0 && end > 0) {
    x = run_unit(
        0,
        [this, layout](const torch::Tensor& ids) {
          auto e = (tp_token_embedding ? tp_token_embedding(ids) : token_embedding(ids)) +
                   position_embedding->forward(layout.positions);
          return options.dropout() > 0 ? torch::dropout(e, options.dropout(), is_training()) : e;
        },
        tokens);
  }
  for (size_t i = std::max<size_t>(first, 1) - 1; i < layers && i + 1 < end; ++i) {
    auto block = blocks->ptr<BlockImpl>(i);
    const bool recompute = checkpoint_every_ > 0 && i % static_cast<size_t>(checkpoint_every_) == 0;
    x = run_unit(
        1 + i, [block, layout](const torch::Tensor& in) { return block->forward(in, layout); }, x,
        recompute);
  }
  if (end < layers + 2) return x;
  return run_unit(
      layers + 1,
      [this](const torch::Tensor& in) {
        return tp_head ? project(tp_head, norm->forward(in)) : project(head, norm->forward(in));
      },
      x);
}

torch::Tensor TransformerLmImpl::forward_units(const std::vector<torch::Tensor>& inputs,
                                               size_t first, size_t end, const torch::Tensor& x) {
  check_input_count("transformer_lm", inputs, 1, 2);
  const torch::Tensor tokens = checked(inputs[0]);
  const TokenLayout layout = inputs.size() == 2
                                 ? TokenLayout::packed(inputs[1], tokens, "transformer_lm")
                                 : TokenLayout::causal(tokens.size(1), tokens.device());
  return run(tokens, layout, first, end, x);
}

std::vector<double> TransformerLmImpl::unit_costs() {
  std::vector<double> costs = Model::unit_costs();
  costs.front() = 0;
  return costs;
}

std::vector<std::vector<torch::Tensor>> TransformerLmImpl::units() {
  std::vector<std::vector<torch::Tensor>> out;
  out.push_back({tp_token_embedding ? tp_token_embedding->weight : token_embedding->weight,
                 position_embedding->weight});
  for (const auto& block : *blocks) out.push_back(block->parameters());
  std::vector<torch::Tensor> last = norm->parameters();
  for (const auto& p : tp_head ? tp_head->parameters() : head->parameters()) last.push_back(p);
  out.push_back(std::move(last));
  return out;
}

bool TransformerLmImpl::checkpoint_activations(int64_t every) {
  UT_CHECK(every >= 0, "transformer_lm: activation checkpointing every ", every,
           " blocks; give a count >= 1 (or 0 = off)");
  checkpoint_every_ = every;
  return true;
}

std::vector<torch::Tensor> TransformerLmImpl::forward_all(
    const std::vector<torch::Tensor>& inputs) {
  check_input_count("transformer_lm", inputs, 1, 2);
  return forward_with_context("transformer_lm", inputs, [&] {
    return std::vector{inputs.size() == 2 ? forward(inputs[0], inputs[1]) : forward(inputs[0])};
  });
}

namespace {

/// The TorchScript twin of a transformer_lm: its layers mirrored, forward written out.
torch::jit::Module export_transformer(const TransformerLmImpl& lm) {
  torch::jit::Module j = torchscript::mirror(lm, "transformer_lm");
  const auto& o = lm.options;
  const int64_t heads = o.heads(), head_dim = o.d_model() / o.heads();
  for (size_t i = 0; i < lm.blocks->size(); ++i) {
    const std::string block = "blocks." + std::to_string(i);
    torchscript::child(j, block + ".attention")
        .define(fmt::format(
            "def forward(self, x):\n"
            "    b = x.size(0)\n"
            "    t = x.size(1)\n"
            "    c = x.size(2)\n"
            "    qkv = self.qkv.forward(x).view([b, t, 3, {heads}, {head_dim}]).permute([2, 0, 3, "
            "1, 4])\n"
            "    q = qkv[0]\n"
            "    k = qkv[1]\n"
            "    v = qkv[2]\n"
            "    scores = torch.matmul(q, k.transpose(-2, -1)) / {scale}\n"
            "    future = torch.ones([t, t], device=x.device).triu(1) != 0\n"
            "    scores = scores.masked_fill(future, float('-inf'))\n"
            "    y = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2).reshape([b, t, "
            "c])\n"
            "    return self.out.forward(y)\n",
            fmt::arg("heads", heads), fmt::arg("head_dim", head_dim),
            fmt::arg("scale", torchscript::literal(std::sqrt(static_cast<double>(head_dim))))));
    torchscript::child(j, block + ".feed_forward")
        .define(
            "def forward(self, x):\n"
            "    return self.proj.forward(torch.gelu(self.fc.forward(x)))\n");
    torchscript::child(j, block).define(
        "def forward(self, x):\n"
        "    x = x + self.attention.forward(self.norm1.forward(x))\n"
        "    return x + self.feed_forward.forward(self.norm2.forward(x))\n");
  }
  std::string s = "def forward(self, tokens):\n";
  // (torch.long cannot be named here: TorchScript compiled from C++ resolves no Python
  // names; arange of an int is int64.)
  s += "    positions = torch.arange(tokens.size(1), device=tokens.device)\n";
  s += "    tokens = tokens.to(positions.dtype)\n";
  s +=
      "    x = self.token_embedding.forward(tokens) + self.position_embedding.forward(positions)\n";
  for (size_t i = 0; i < lm.blocks->size(); ++i) {
    s += "    x = " + torchscript::item("blocks", i) + ".forward(x)\n";
  }
  s += "    return self.head.forward(self.norm.forward(x))\n";
  j.define(s);
  return j;
}

}  // namespace

void register_transformer_lm() {
  register_declared_model<TransformerLmOptions, TransformerLmImpl>(
      "transformer_lm",
      "decoder-only transformer language model: token ids [B, T] -> logits [B, T, vocab]");
  register_torchscript_export<TransformerLmImpl>("transformer_lm", export_transformer);
}

}  // namespace unitrain::models
