#include "unitrain/engine/config_driven.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include "unitrain/core/error.h"
#include "unitrain/engine/peft_adapter.h"
#include "unitrain/engine/setup/init_weights.h"
#include "unitrain/log/console.h"
#include "unitrain/models/lora.h"

namespace unitrain {

ConfigDriven config_driven(const Config& config) {
  ConfigDriven c{RunSettings::from_config(config), {}, {}, {}};
  UT_CHECK(!c.run.model.is_null(),
           "missing key model: a config-driven run needs model.type "
           "(see `unitrain list` for the models)");
  c.data_keys = DataOptions::from_config(c.run.data);
  UT_CHECK(c.data_keys.train, "missing key data.train: a config-driven run needs a training "
           "dataset (see `unitrain list` for the datasets)");
  c.model_keys = ModelSection::from_config(c.run.model);
  objective_section_schema();  // registers the components the objective names
  c.objective_keys = options_of<ObjectiveOptions>().parse(c.run.objective);
  return c;
}

namespace {

constexpr uint64_t kLoraSeedSalt = 0x4c6f5241;  // "LoRA"

/// model.lora's adapters on `module`'s model (of type `type`), logged.
void add_lora(ObjectiveModule& module, const LoraOptions& lora, const std::string& type,
              uint64_t seed) {
  Model& model = *module.model();
  UT_CHECK(model.runs_lora_adapters(), "model.lora: model type '", type,
           "' does not run LoRA adapters (built in: gpt2, llama, transformer_lm); a model of "
           "your own calls its layers through unitrain::models::project and overrides "
           "Model::runs_lora_adapters (docs/api.md)");
  // A generator of the adapters' own: the run's dropout and data draw as without LoRA, so step
  // 0 is the base model's to the bit.
  const auto layers = models::add_lora_adapters(
      model, lora, "model.lora", at::make_generator<at::CPUGeneratorImpl>(seed ^ kLoraSeedSalt));
  int64_t trainable = 0, all = 0;
  for (const auto& p : model.parameters()) {
    all += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  log::info(fmt::format(
      "model.lora: adapters of rank {} on {} layers (scaling {}): {} trainable parameters of {} "
      "({:.3g}%), the rest frozen",
      lora.r, layers.size(), lora.scaling(), trainable, all,
      100.0 * double(trainable) / double(all)));
}

}  // namespace

std::shared_ptr<ObjectiveModule> build_module(const ConfigDriven& c, bool init) {
  auto module = std::make_shared<ObjectiveModule>(c.run.model, c.run.objective);
  const ActivationCheckpointingOptions& ac = c.model_keys.activation_checkpointing;
  UT_CHECK(!ac.enabled || module->model()->checkpoint_activations(ac.every),
           "model.activation_checkpointing.enabled: model type '", c.model_keys.type,
           "' has no blocks it can recompute (built in: transformer_lm, gpt2, llama); a model of your own "
           "wraps its blocks in unitrain::checkpointed (docs/api.md), or set enabled: false");
  const HfModelInfo* hf = module->model()->hf_info();
  const bool pretrained = hf != nullptr && !hf->pretrained.empty();
  const std::optional<LoraOptions>& lora = c.model_keys.lora;
  const std::optional<std::string>& init_from = c.model_keys.init_from;
  const bool adapter = lora && init_from && is_peft_adapter_folder(*init_from);
  UT_CHECK(!pretrained || !init_from || adapter,
           "model.init_from and model.args.pretrained both give the model's weights: keep one "
           "(model.args.config gives a Hugging Face model's shape without its weights; with "
           "model.lora, init_from may be a PEFT adapter folder)");
  // With LoRA the base weights are read whenever the model is built: checkpoints hold the
  // adapters alone.
  const bool base = init || lora.has_value();
  if (base && pretrained) load_pretrained_weights(*module, *hf);
  if (base && init_from && !adapter) load_init_weights(*module, c.model_keys);
  if (lora) {
    add_lora(*module, *lora, c.model_keys.type, c.run.seed);
    if (init && adapter) load_peft_adapter(*module, *lora, *init_from, "model.init_from");
  }
  return module;
}

}  // namespace unitrain
