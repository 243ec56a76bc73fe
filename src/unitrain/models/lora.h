#pragma once
// LoRA (Hu et al. 2021, as PEFT computes it): low-rank adapters on named linear layers of a
// model whose other parameters stay frozen. y = base(x) + (dropout(x) A^T B^T) * scaling.
#include <ATen/core/Generator.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <string>
#include <vector>

#include "unitrain/core/options.h"

namespace unitrain {

/// `model.lora`: the adapters' shape and which layers get one (PEFT's LoraConfig names).
struct LoraOptions {
  int64_t r = 8;         ///< the adapters' rank
  double alpha = 8.0;    ///< lora_alpha: scaling = alpha / r (alpha / sqrt(r) with rslora)
  double dropout = 0.0;  ///< on the adapter's input only, while training
  /// target_modules as a list (PEFT's rule: each a layer's whole name or its last parts after
  /// a '.'); empty when target_pattern is set.
  std::vector<std::string> target_modules;
  /// target_modules as one string (PEFT's rule): "all-linear" (any case: every Linear or
  /// Conv1D layer but the model's output layer) or a regular expression a layer's whole name
  /// must match (re.fullmatch; ECMAScript syntax here). "" = the list form.
  std::string target_pattern;
  /// Modules trained in full beside the adapters (PEFT's modules_to_save: e.g. lm_head), named
  /// as list targets are; no adapter goes on them or inside them.
  std::vector<std::string> modules_to_save;
  bool rslora = false;  ///< use_rslora

  double scaling() const;
  /// target_pattern is "all-linear" (PEFT compares it in lower case).
  bool all_linear() const;
  static void declare(Options<LoraOptions>& o);
};

namespace models {

/// An adapter's down projection A [r, in] (kaiming_uniform a = sqrt(5), as nn.Linear's weight
/// and PEFT: U(-1/sqrt(in), 1/sqrt(in))), with the dropout on its input. Registered as `lora_A`
/// on the adapted layer.
class LoraDownImpl : public torch::nn::Module {
 public:
  LoraDownImpl(int64_t in, int64_t r, double dropout,
               c10::optional<at::Generator> generator = c10::nullopt);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
  double dropout;
};

/// An adapter's up projection B [out, r] (zeros: step 0 equals the base model), times the
/// scaling. Registered as `lora_B` on the adapted layer.
class LoraUpImpl : public torch::nn::Module {
 public:
  LoraUpImpl(int64_t r, int64_t out, double scaling);
  torch::Tensor forward(const torch::Tensor& h);
  torch::Tensor weight;
  double scaling;
};

/// One adapted layer: its name in the model, the layer, whether its weight is [in, out]
/// (Hugging Face's Conv1D, GPT-2: PEFT's fan_in_fan_out) rather than Linear's [out, in].
struct LoraLayer {
  std::string name;
  torch::nn::Module* layer;
  bool fan_in_fan_out;
};

/// Whether `target` names module `name` as PEFT's lists do: the whole name, or its last parts
/// after a '.' (q_proj and self_attn.q_proj name model.layers.0.self_attn.q_proj).
bool names_module(const std::string& name, const std::string& target);

/// The names of the modules of `model` that `o.modules_to_save` names (the outermost ones, in
/// the model's order). ConfigError naming `key` when an entry names no module.
std::vector<std::string> lora_modules_to_save(torch::nn::Module& model, const LoraOptions& o,
                                              const std::string& key = "model.lora");

/// The names of the layers of `model` that `o` adapts, in the model's order: those its
/// target_modules name (a list, a regular expression, or all-linear: every Linear or Conv1D
/// layer but the output layer, the last such layer that is a child of `model` itself: lm_head,
/// transformer_lm's head), leaving out modules_to_save and what they hold (PEFT's rule).
/// ConfigError naming `key` when a list entry names no layer (listing the layers that can take
/// one) or a module to save, when a pattern matches none or is not a valid regular
/// expression, or when a target names a layer of another kind.
std::vector<std::string> lora_target_layers(torch::nn::Module& model, const LoraOptions& o,
                                            const std::string& key = "model.lora");

/// The shortest target_modules list that names exactly `adapted` among the layers of `model`:
/// their last names when those name no other layer (as PEFT writes all-linear's), else their
/// whole names. Sorted. What PEFT's adapter_config.json holds for a list or all-linear.
std::vector<std::string> target_modules_naming(torch::nn::Module& model,
                                               const std::vector<std::string>& adapted);

/// Puts an adapter (`lora_A`, `lora_B`) on each layer lora_target_layers names (a
/// torch::nn::Linear or Hugging Face Conv1D, or one of parallel/tensor_parallel.h's layers cut
/// over a tensor group: the adapter drawn whole, then cut with its layer as tp::splits_of
/// says), and freezes every other parameter (requires_grad
/// false: no gradient, no optimizer state) but those of `o.modules_to_save`, which train in
/// full. A draws from `generator` (the run's unitrain seeds one of its own, so that the
/// adapters leave the draws of dropout and data as a run without them makes them), else from
/// torch's default one. ConfigError naming `key` as lora_target_layers and
/// lora_modules_to_save say.
std::vector<LoraLayer> add_lora_adapters(torch::nn::Module& model, const LoraOptions& o,
                                         const std::string& key = "model.lora",
                                         c10::optional<at::Generator> generator = c10::nullopt);
/// The layers of `model` that carry an adapter, in the model's order.
std::vector<LoraLayer> lora_layers(torch::nn::Module& model);
/// `y` (the layer's own output on `x`) plus the layer's adapter term, when it has one (a layer
/// cut over a tensor group: its part of the term, the rank-r activation whole on every process
/// of the group).
torch::Tensor with_lora(torch::nn::Module& layer, const torch::Tensor& x, torch::Tensor y);
/// The adapter's weight delta in the layer's weight layout: (B A) * scaling, transposed for a
/// fan_in_fan_out layer; merging is `weight + lora_delta(...)`.
torch::Tensor lora_delta(const LoraLayer& adapted);
/// Adds each adapter's lora_delta into its layer's weight and removes the adapter: the model
/// then computes what the adapted one did (without dropout) with no adapter. Returns the
/// number of layers merged.
size_t merge_lora_adapters(torch::nn::Module& model);

/// A layer's forward with its adapter, if any: models call their projections through it
/// (`project(q_proj, x)` for `q_proj->forward(x)`) so that model.lora can adapt them.
template <typename Layer>
torch::Tensor project(Layer& layer, const torch::Tensor& x) {
  return with_lora(*layer, x, layer->forward(x));
}

}  // namespace models
}  // namespace unitrain
