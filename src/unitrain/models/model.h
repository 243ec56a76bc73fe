#pragma once
// Model: what the config-driven objective trains. Named inputs in, named predictions out.
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/registry.h"
#include "unitrain/core/unit_runner.h"
#include "unitrain/models/lora.h"

namespace unitrain {

class ProcessGroup;

namespace models {
class HfCausalLm;
}

/// Logits whose last dimension is cut over a tensor group (distributed.tensor_parallel): this
/// process's columns [start, start + V / T) of the full vocabulary of `vocab`.
struct VocabSplit {
  std::shared_ptr<ProcessGroup> group;
  int64_t start = 0;
  int64_t vocab = 0;
  int64_t chunks = 0;  ///< the head's chunks on this process (0: not chunked)
};

/// Registers this area's built-in components (idempotent; engine's register_builtins()
/// calls every area's).
void register_builtin_models();

namespace models {
struct HfFamily;
}  // namespace models

/// What a model built from a Hugging Face folder (gpt2, llama) says of it: its family
/// (hf_family.h), where its weights come from (`pretrained:`, read by the engine as
/// model.init_from is, so that ZeRO 3's parts and resumes work the same) and what `unitrain
/// export --format hf` writes.
struct HfModelInfo {
  const models::HfFamily* family = nullptr;
  std::string pretrained;   ///< the folder the weights come from; "" = a fresh model
  std::string config_json;  ///< config.json as the model computes (the folder's own keys kept)
  std::string generation_config_json;  ///< generation_config.json
  /// The model's name of a tensor named `file_name` in the folder's weights ("h.0.ln_1.weight"
  /// -> "transformer.h.0.ln_1.weight"); "" for a tensor the model does not hold (a causal-mask
  /// buffer, rotary frequencies, a tied head's copy of the embeddings): the family's, for this
  /// model's head.
  std::function<std::string(const std::string& file_name)> model_name;
};

/// A torch::nn::Module that maps the batch tensors listed in `objective.inputs` (in that order)
/// to the predictions listed in `objective.predictions` (in that order).
class Model : public torch::nn::Module {
 public:
  virtual std::vector<torch::Tensor> forward_all(const std::vector<torch::Tensor>& inputs) = 0;
  /// Names of the predictions, when the model knows them (a TorchScript module returning a
  /// dict); empty means positional.
  virtual std::vector<std::string> prediction_names() const { return {}; }
  /// Recomputes the activations of every `every`-th block in backward instead of keeping them
  /// from forward (model.activation_checkpointing); 0 = keep them all. False when the model has
  /// no blocks it can recompute (nothing changes then).
  virtual bool checkpoint_activations(int64_t every) { return every == 0; }
  /// The pieces forward runs one after another, each by its parameters (TrainModule::units());
  /// default: none.
  virtual std::vector<std::vector<torch::Tensor>> units() { return {}; }
  /// Whether forward calls its linear layers through models::project (lora.h), so that LoRA
  /// adapters (model.lora) take part; the built-in gpt2, llama and transformer_lm do.
  virtual bool runs_lora_adapters() const { return false; }
  /// Set for a model built from a Hugging Face folder (HfModelInfo); null for others.
  virtual const HfModelInfo* hf_info() const { return nullptr; }
  /// The model's context length: the most positions one forward takes (n_positions,
  /// max_position_embeddings, seq_len); nullopt when it has no such limit or does not say.
  virtual std::optional<int64_t> context_length() const { return std::nullopt; }
  /// The token ids it embeds: every id must be below it (vocab_size); nullopt for a model that
  /// takes no token ids or does not say.
  virtual std::optional<int64_t> vocab_size() const { return std::nullopt; }
  /// The model as the causal LM that models::generate (generation.h) drives, one token at a
  /// time with a KV cache; null when it cannot generate text (the default).
  virtual models::HfCausalLm* generation_model() { return nullptr; }
  /// Set when the model's logits are cut over a tensor group (built inside a tp::BuildScope of
  /// more than one process): the objective's cross_entropy is then the vocabulary-parallel one.
  virtual std::optional<VocabSplit> vocab_split() const { return std::nullopt; }
  /// Pipeline parallelism (distributed.pipeline_parallel): units [first, end) of units() on
  /// `inputs` (what forward_all takes; every stage has them), `x` being what unit first - 1
  /// returned (undefined when first is 0); returns what unit end - 1 returns (the one
  /// prediction when end is units().size()). Default: ConfigError (the model runs whole).
  virtual torch::Tensor forward_units(const std::vector<torch::Tensor>& inputs, size_t first,
                                      size_t end, const torch::Tensor& x);
  /// Parameters a unit uses besides its own, as (unit, parameter) (TrainModule::
  /// borrowed_parameters): a tied head's embeddings. Default: none.
  virtual std::vector<std::pair<size_t, torch::Tensor>> borrowed_parameters() { return {}; }
  /// Why the model cannot be cut into pipeline stages (a ConfigError's message naming the key),
  /// nullopt when forward_units runs any range of units. Default: a model without units runs
  /// whole; one with units declares forward_units.
  virtual std::optional<std::string> stage_refusal() const;
  /// What each unit of units() costs to run, relative to the others (the pipeline's stages are
  /// balanced by it). Default: its parameters' elements.
  virtual std::vector<double> unit_costs();
  /// Who runs the units (null: straight through).
  void set_unit_runner(std::shared_ptr<UnitRunner> runner) { unit_runner_ = std::move(runner); }

 protected:
  /// Whether units run through a unit runner (ZeRO 3: a unit's parameters exist whole only
  /// while it runs, so a tensor one unit hands another must be its own copy).
  bool units_run_apart() const { return unit_runner_ != nullptr; }
  /// Unit `unit` of units() on `inputs`: through the unit runner when one is set; with
  /// `recompute`, keeping only its inputs for backward (activation checkpointing).
  std::vector<torch::Tensor> run_unit(size_t unit, const TensorsFn& fn,
                                      const std::vector<torch::Tensor>& inputs,
                                      bool recompute = false);
  /// One tensor in, one out.
  torch::Tensor run_unit(size_t unit, const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                         const torch::Tensor& input, bool recompute = false);

 private:
  std::shared_ptr<UnitRunner> unit_runner_;
};

using ModelPtr = std::shared_ptr<Model>;

/// Registered models (`model.type`), built from their resolved `args`.
Registry<ModelPtr>& model_registry();

/// Registers model `name`, a ModelImpl built from the args its options struct declares
/// (`static void ModelOptions::declare(Options<ModelOptions>&)`).
template <typename ModelOptions, typename ModelImpl>
void register_declared_model(const std::string& name, const std::string& help) {
  model_registry().add<ModelOptions>(
      name, help, [](const ModelOptions& o) -> ModelPtr { return std::make_shared<ModelImpl>(o); });
}

/// `model.activation_checkpointing`: which blocks recompute their activations in backward.
struct ActivationCheckpointingOptions {
  bool enabled = false;
  int64_t every = 1;  ///< every N-th block, from the first

  static void declare(Options<ActivationCheckpointingOptions>& o);
};

/// The keys of the `model` section besides `type` and `args`: `init_from` (a state_dict file
/// saved from Python or by `unitrain export`, or a safetensors file, loaded into the new
/// model, or with `lora` a PEFT adapter folder), `init_key_map` (prefix renames of its names),
/// `init_strict`, `activation_checkpointing` and `lora`; each declared once in declare().
struct ModelSection {
  std::optional<std::string> init_from;
  NamedStrings init_key_map;  ///< (from, to) prefixes, e.g. {"transformer.", ""}
  bool init_strict = true;
  ActivationCheckpointingOptions activation_checkpointing;
  std::optional<LoraOptions> lora;  ///< null = no adapters: every parameter trains
  std::string type;  ///< the component's `type` (the registered model), "" when unset

  static void declare(Options<ModelSection>& o);
  /// From the resolved `model` section (its `type` and `args` are the component's).
  static ModelSection from_config(const Config& model_section) {
    return options_of<ModelSection>().read_resolved(model_section);
  }
};

/// The schema of ModelSection's keys, which the `model` section has beside `type` and `args`.
std::shared_ptr<const Schema> model_section_schema();

}  // namespace unitrain
