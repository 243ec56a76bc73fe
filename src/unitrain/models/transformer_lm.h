#pragma once
// TransformerLm: a decoder-only (GPT-style) language model, usable from C++ and as
// `type: transformer_lm`.
#include <torch/arg.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "unitrain/core/options.h"
#include "unitrain/models/model.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain::models {

struct TokenLayout;

/// Registers `transformer_lm`: its factory and its TorchScript export (called by
/// register_builtin_models()).
void register_transformer_lm();

/// Options of a TransformerLm: `TransformerLmOptions(65).d_model(64).layers(2).heads(4)`.
struct TransformerLmOptions {
  explicit TransformerLmOptions(int64_t vocab) : vocab_(vocab) {}
  TORCH_ARG(int64_t, vocab);
  TORCH_ARG(int64_t, d_model) = 128;
  TORCH_ARG(int64_t, layers) = 2;
  /// Attention heads; must divide d_model.
  TORCH_ARG(int64_t, heads) = 4;
  /// Maximum context (number of learned positions).
  TORCH_ARG(int64_t, seq_len) = 128;
  /// Dropout on the embeddings, the attention weights and each residual branch, in [0, 1).
  TORCH_ARG(double, dropout) = 0.1;
  /// The feed-forward width is ff_mult * d_model.
  TORCH_ARG(int64_t, ff_mult) = 4;

 public:
  /// Declares the args (key, range, help; defaults are the fields' own): the model
  /// registry's schema and parser (options_of<TransformerLmOptions>()).
  static void declare(Options<TransformerLmOptions>& o);
  /// The defaults declare() starts from (vocab is required).
  static TransformerLmOptions option_defaults() { return TransformerLmOptions(0); }
  /// ConfigError naming `<key_prefix><key>` when an option is out of range or d_model is not a
  /// multiple of heads (naming both keys).
  void validate(const std::string& key_prefix = "") const;
};

/// Token + learned position embeddings -> `layers` pre-norm blocks
/// (x + attention(norm1(x)), then x + feed_forward(norm2(x)), causal multi-head self-attention,
/// GELU feed-forward) -> final LayerNorm -> Linear head. Weights are initialised as GPT-2
/// (normal, std 0.02; zero biases).
/// Parameters: `token_embedding.weight`, `position_embedding.weight`,
/// `blocks.<i>.{norm1, attention.qkv, attention.out, norm2, feed_forward.fc,
/// feed_forward.proj}.{weight, bias}`, `norm.{weight, bias}`, `head.{weight, bias}`.
/// forward: token ids, integer [B, T] with 1 <= T <= seq_len and ids in [0, vocab) ->
/// logits [B, T, vocab], where position t depends only on tokens 0..t. Anything else is a
/// ConfigError naming the expected and actual shape or value.
/// Built inside a tp::BuildScope (parallel/tensor_parallel.h) of T processes: Megatron's split,
/// the same parameter names with each process's part — the token embedding and the head by
/// vocabulary (token_embedding and head are then null: their layers are tp_token_embedding and
/// tp_head), each block's attention by heads (qkv column-parallel in q|k|v blocks, out
/// row-parallel) and feed-forward by width (fc column-, proj row-parallel); the norms and the
/// positions whole. forward then gives this process's logits [B, T, its part of vocab] (the
/// vocabulary cut as evenly as it goes: tp::part_range). ConfigError naming the key when heads
/// or the feed-forward width does not divide by T.
class TransformerLmImpl : public Model {
 public:
  explicit TransformerLmImpl(TransformerLmOptions options);

  torch::Tensor forward(torch::Tensor tokens);
  /// Packed rows: `segments` int64 [B, T] numbers the examples of each row; attention stays
  /// inside each example and positions restart with each (models/token_layout.h).
  torch::Tensor forward(torch::Tensor tokens, const torch::Tensor& segments);
  /// Token ids, and optionally segment ids (objective.inputs: [x, segments]); one prediction.
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override;
  /// Blocks 0, every, 2 * every, ... recompute their activations in backward; 0 = none.
  bool checkpoint_activations(int64_t every) override;
  /// The embeddings (token and position), each block, then the final norm with the head.
  std::vector<std::vector<torch::Tensor>> units() override;
  /// Units [first, end) on the token ids (and segment ids) of `inputs`: a pipeline stage's.
  torch::Tensor forward_units(const std::vector<torch::Tensor>& inputs, size_t first, size_t end,
                              const torch::Tensor& x) override;
  /// A block's and the head's parameter elements; the embeddings, looked up, cost none.
  std::vector<double> unit_costs() override;
  std::optional<std::string> stage_refusal() const override { return std::nullopt; }
  bool runs_lora_adapters() const override { return true; }
  /// seq_len (it generates no text: no KV cache).
  std::optional<int64_t> context_length() const override { return options.seq_len(); }
  std::optional<int64_t> vocab_size() const override { return options.vocab(); }
  /// Built inside a tp::BuildScope of T > 1 processes: the head's logits are this process's
  /// 1/T of the vocabulary.
  std::optional<VocabSplit> vocab_split() const override;

  TransformerLmOptions options;
  torch::nn::Embedding token_embedding{nullptr};
  torch::nn::Embedding position_embedding{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
  VocabParallelEmbedding tp_token_embedding{nullptr};  ///< under tensor parallelism
  ColumnParallelLinear tp_head{nullptr};               ///< under tensor parallelism

 private:
  std::shared_ptr<ProcessGroup> tensor_group_;  ///< null: whole
  bool cut_ = false;  ///< built of parallel layers (a tensor group, or chunks)
  torch::Tensor checked(torch::Tensor tokens) const;
  /// Units [first, end) (all by default): `x` what unit first - 1 returned, undefined for 0.
  torch::Tensor run(const torch::Tensor& tokens, const TokenLayout& layout, size_t first = 0,
                    size_t end = SIZE_MAX, torch::Tensor x = {});
  int64_t checkpoint_every_ = 0;
};

/// A shared_ptr-like holder of TransformerLmImpl.
TORCH_MODULE(TransformerLm);

}  // namespace unitrain::models
