#pragma once
// gpt2 and llama: causal language models built from a Hugging Face folder (`pretrained:`) or its
// config.json alone (`config:`), whose parameters have Hugging Face's names and shapes
// (GPT2LMHeadModel's, LlamaForCausalLM's), so the folder's weights load with no key map and
// `unitrain export --format hf` writes a folder transformers and llama.cpp read.
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "unitrain/models/gpt2_config.h"
#include "unitrain/models/hf_config.h"
#include "unitrain/models/hf_family.h"
#include "unitrain/models/hf_shape_check.h"
#include "unitrain/models/llama_config.h"
#include "unitrain/models/model.h"
#include "unitrain/models/token_layout.h"
#include "unitrain/parallel/tensor_parallel.h"

namespace unitrain::models {

/// Registers `gpt2` and `llama`, each its model type and its Hugging Face family (called by
/// register_builtin_models()).
void register_hf_causal_lms();
void register_gpt2();
void register_llama();
/// Registers a llama-shaped family: model type `family.model_type`, a LlamaImpl of the config
/// `read` reads from model.args, and `family` (qwen.cpp, mistral.cpp, gemma.cpp, phi3.cpp).
void register_llama_family(const HfFamily& family, LlamaConfig (*read)(const std::string& path),
                           const std::string& help);
void register_qwen();
void register_mistral();
void register_gemma();  ///< gemma, gemma2 and gemma3_text
void register_phi3();

/// What gpt2 and llama share: token ids in (and, for packed rows, segment ids), one prediction
/// (logits), incremental decoding with a KV cache, blocks that recompute their activations, the
/// Hugging Face folder they came from.
class HfCausalLm : public Model {
 public:
  /// Token ids [B, T] -> logits [B, T, vocab].
  torch::Tensor forward(torch::Tensor tokens);
  /// Packed rows: `segments` int64 [B, T] numbers the examples of each row (TokenLayout::packed:
  /// attention stays inside each example, positions restart with each).
  torch::Tensor forward(torch::Tensor tokens, const torch::Tensor& segments);
  /// The logits of `tokens` [B, T] that follow the `cache.length` tokens `cache` holds, whose
  /// keys and values it reuses; adds the new tokens' to it. The same logits as forward() on
  /// all the tokens (to float rounding), at the cost of the new ones only.
  torch::Tensor forward_cached(torch::Tensor tokens, KvCache& cache);
  /// The most tokens a sequence may hold (n_positions, max_position_embeddings).
  virtual int64_t max_length() const = 0;
  /// config.json's vocab_size: token ids must be below it.
  virtual int64_t vocabulary() const = 0;
  /// Sliding-window attention's window (Mistral's sliding_window); 0 = none.
  virtual int64_t attention_window() const { return 0; }
  /// inputs: token ids, and optionally segment ids (objective.inputs: [x, segments]).
  std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) override;
  /// Units [first, end) on the token ids (and segment ids) of `inputs` (run_units).
  torch::Tensor forward_units(const std::vector<torch::Tensor>& inputs, size_t first, size_t end,
                              const torch::Tensor& x) override;
  /// A block's and the head's parameter elements; the embeddings, looked up, cost none.
  std::vector<double> unit_costs() override;
  /// None: every family runs any range of its units (run_units).
  std::optional<std::string> stage_refusal() const override { return std::nullopt; }
  /// Blocks 0, every, 2 * every, ... recompute their activations in backward; 0 = none.
  bool checkpoint_activations(int64_t every) override;
  const HfModelInfo* hf_info() const override { return &info_; }
  bool runs_lora_adapters() const override { return true; }
  /// max_length().
  std::optional<int64_t> context_length() const override { return max_length(); }
  /// vocabulary().
  std::optional<int64_t> vocab_size() const override { return vocabulary(); }
  HfCausalLm* generation_model() override { return this; }

 protected:
  explicit HfCausalLm(const char* type) : type_(type) {}
  /// Logits of checked token ids laid out as `layout` says.
  virtual torch::Tensor run(torch::Tensor tokens, const TokenLayout& layout) = 0;
  /// run() of units [first, end) alone, `x` what unit first - 1 returned (undefined for 0): a
  /// pipeline stage's.
  virtual torch::Tensor run_units(torch::Tensor tokens, const TokenLayout& layout, size_t first,
                                  size_t end, torch::Tensor x) = 0;
  /// The token ids checked (checked_tokens): int64 [B, T].
  virtual torch::Tensor checked(torch::Tensor tokens) const = 0;
  /// Whether block `i` recomputes its activations.
  bool recomputes(size_t i) const {
    return checkpoint_every_ > 0 && i % static_cast<size_t>(checkpoint_every_) == 0;
  }
  HfModelInfo info_;

 private:
  const char* type_;
  int64_t checkpoint_every_ = 0;
};

/// GPT-2 (GPT2LMHeadModel): token + learned position embeddings, pre-LayerNorm blocks of causal
/// self-attention and a GELU MLP (Conv1D weights [in, out]: y = x W + b), ln_f, a head tied to
/// the token embeddings (or `lm_head.weight` when tie_word_embeddings is false).
/// Parameters: `transformer.{wte, wpe}.weight`, `transformer.h.<i>.{ln_1, attn.c_attn,
/// attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}.{weight, bias}`, `transformer.ln_f.{weight, bias}`.
/// forward: token ids [B, T], T <= n_positions -> logits [B, T, vocab_size].
class Gpt2Impl : public HfCausalLm {
 public:
  explicit Gpt2Impl(const HfModelOptions& options);
  /// The parameters a gpt2 of config `c` (read from `path`) has, by name and shape.
  static ConfigShape shape_of(const Gpt2Config& c, const std::string& path);
  int64_t max_length() const override { return config.n_positions; }
  int64_t vocabulary() const override { return config.vocab_size; }
  /// The embeddings, each block, then ln_f (with lm_head when untied).
  /// A tied head: wte's weight, in the last unit.
  std::vector<std::pair<size_t, torch::Tensor>> borrowed_parameters() override;
  std::vector<std::vector<torch::Tensor>> units() override;
  /// Built inside a tp::BuildScope of T > 1 processes (distributed.tensor_parallel): Megatron's
  /// split under the same names and Conv1D's [in, out] layout — wte (and an untied lm_head) by
  /// vocabulary (cut as evenly as it goes: 50257 over 2 is 25129 and 25128 rows), c_attn by
  /// heads (q, k and v each), c_fc by the inner width, the c_proj layers by their input; wpe
  /// and the LayerNorms whole — and the logits this process's vocabulary. ConfigError naming
  /// the config.json key (n_head, n_inner) that does not divide by T.
  std::optional<VocabSplit> vocab_split() const override;
  /// Null under tensor parallelism (its logits are parts: it generates in one process).
  HfCausalLm* generation_model() override { return tensor_group_ ? nullptr : this; }

  Gpt2Config config;
  std::shared_ptr<torch::nn::Module> transformer;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};  ///< wte null under tensor parallelism
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr};  ///< null when tied, or under tensor parallelism (tp_head)
  VocabParallelEmbedding tp_wte{nullptr};
  ColumnParallelLinear tp_head{nullptr};

 protected:
  torch::Tensor run(torch::Tensor tokens, const TokenLayout& layout) override;
  /// A stage's units (a tied head on the last stage takes the embeddings it holds beside).
  torch::Tensor run_units(torch::Tensor tokens, const TokenLayout& layout, size_t first, size_t end,
                          torch::Tensor x) override;
  torch::Tensor checked(torch::Tensor tokens) const override;

 private:
  /// wte's weight (this process's rows under tensor parallelism).
  const torch::Tensor& token_weight() const;
  std::shared_ptr<ProcessGroup> tensor_group_;  ///< null: whole
  bool cut_ = false;  ///< built of parallel layers (a tensor group, or chunks)
};

/// Llama (LlamaForCausalLM, Llama 2 and 3): token embeddings, pre-RMSNorm blocks (RMSNorm in
/// float32) of grouped-query causal self-attention with rotary embeddings (Hugging Face's
/// rotate_half layout, rope_theta, Llama 3's and linear rope_scaling) and a SwiGLU MLP, a final
/// RMSNorm and lm_head (or the embeddings, tied). Optional biases, an explicit head_dim.
/// Parameters: `model.embed_tokens.weight`, `model.layers.<i>.{input_layernorm,
/// post_attention_layernorm}.weight`, `model.layers.<i>.self_attn.{q,k,v,o}_proj.weight` (and
/// `.bias`), `model.layers.<i>.mlp.{gate,up,down}_proj.weight` (and `.bias`),
/// `model.norm.weight`, `lm_head.weight` (untied). The same model computes the llama-shaped
/// families (qwen.cpp, mistral.cpp): Qwen2 (q/k/v biases, o_proj without), Qwen3
/// (`self_attn.{q,k}_norm.weight`: an RMSNorm over each head's q and k before the rotation),
/// Mistral (sliding-window attention), Gemma (gemma.cpp: GeGLU, RMSNorm by 1 + w, scaled
/// embeddings), Phi-3 (phi3.cpp: `self_attn.qkv_proj` and `mlp.gate_up_proj` fused).
/// forward: token ids [B, T], T <= max_position_embeddings -> logits [B, T, vocab_size].
class LlamaImpl : public HfCausalLm {
 public:
  explicit LlamaImpl(const HfModelOptions& options);
  /// A llama-shaped family's model (qwen.cpp): its config read, its family.
  LlamaImpl(const HfModelOptions& options, LlamaConfig config, const HfFamily& family);
  /// The parameters a llama of config `c` (read from `path`) has, by name and shape.
  static ConfigShape shape_of(const LlamaConfig& c, const std::string& path);
  int64_t max_length() const override { return config.max_position_embeddings; }
  int64_t vocabulary() const override { return config.vocab_size; }
  /// sliding_window when every layer slides (Mistral, Phi-3); Gemma 2/3's run() windows their
  /// sliding layers alone.
  int64_t attention_window() const override {
    return config.sliding_layers.empty() ? config.sliding_window : 0;
  }
  /// The embeddings, each block, then the norm (with lm_head when untied).
  std::vector<std::vector<torch::Tensor>> units() override;
  /// Built inside a tp::BuildScope of T > 1 processes (distributed.tensor_parallel): Megatron's
  /// split under the same names — embed_tokens and lm_head by vocabulary (cut as evenly as it
  /// goes: tp::part_range), q/k/v by heads (and
  /// key/value heads), o_proj and down_proj by their input, gate/up by the intermediate width;
  /// the norms whole — and the logits this process's vocabulary. ConfigError naming the
  /// config.json key that does not divide by T; Phi-3's fused projections refused.
  std::optional<VocabSplit> vocab_split() const override;
  /// Null under tensor parallelism (its logits are parts: it generates in one process).
  HfCausalLm* generation_model() override { return tensor_group_ ? nullptr : this; }

  LlamaConfig config;
  std::shared_ptr<torch::nn::Module> body;     ///< `model.`
  torch::nn::Embedding embed_tokens{nullptr};  ///< null under tensor parallelism (tp_embed)
  torch::nn::ModuleList layers{nullptr};
  torch::nn::Module* norm = nullptr;   ///< an RMSNorm (its `weight`)
  torch::nn::Linear lm_head{nullptr};  ///< null when tied, or under tensor parallelism (tp_head)
  VocabParallelEmbedding tp_embed{nullptr};
  ColumnParallelLinear tp_head{nullptr};

 protected:
  torch::Tensor run(torch::Tensor tokens, const TokenLayout& layout) override;
  /// A tied head: the embeddings, in the last unit.
  std::vector<std::pair<size_t, torch::Tensor>> borrowed_parameters() override;
  /// A stage's units; ConfigError for one without the embeddings when the head is tied to them.
  torch::Tensor run_units(torch::Tensor tokens, const TokenLayout& layout, size_t first, size_t end,
                          torch::Tensor x) override;
  torch::Tensor checked(torch::Tensor tokens) const override;

 private:
  /// Rotary cos and sin of `positions` ([T] or [B, T]): [T, head_dim] or [B, 1, T, head_dim],
  /// in float32.
  std::pair<torch::Tensor, torch::Tensor> rotary(const torch::Tensor& positions,
                                                 const torch::Tensor& inv_freq) const;
  std::shared_ptr<ProcessGroup> tensor_group_;  ///< null: whole
  bool cut_ = false;              ///< built of parallel layers (a tensor group, or chunks)
  torch::Tensor inv_freq_;        ///< [head_dim / 2], float32, CPU
  torch::Tensor inv_freq_local_;  ///< Gemma 3's sliding layers'; undefined for the others
};

}  // namespace unitrain::models
