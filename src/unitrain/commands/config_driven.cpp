#include "unitrain/commands/config_driven.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/modules/embedding.h>

#include <nlohmann/json.hpp>

#include "unitrain/commands/init_weights.h"
#include "unitrain/commands/peft_adapter.h"
#include "unitrain/core/error.h"
#include "unitrain/log/console.h"
#include "unitrain/models/hf_family.h"
#include "unitrain/models/lora.h"

namespace unitrain {

ConfigDriven config_driven(const Config& config) {
  ConfigDriven c{RunSettings::from_config(config), {}, {}, {}};
  c.data_keys = config_driven_data(c.run);
  c.model_keys = ModelSection::from_config(c.run.model);
  objective_section_schema();  // registers the components the objective names
  c.objective_keys = options_of<ObjectiveOptions>().parse(c.run.objective);
  return c;
}

namespace {

constexpr uint64_t kLoraSeedSalt = 0x4c6f5241;  // "LoRA"

/// A module to save may not hold the token embedding a tied head also computes with: PEFT
/// trains a copy of it while the head keeps the base weights, unitrain the one weight both use,
/// so no adapter folder could hold such a run. (A tied head has no weight of its own:
/// HfModelInfo::model_name drops lm_head.weight.)
void check_no_tied_module_to_save(Model& model, const LoraOptions& lora) {
  const HfModelInfo* hf = model.hf_info();
  if (lora.modules_to_save.empty() || hf == nullptr || !hf->model_name ||
      !hf->model_name("lm_head.weight").empty()) {
    return;
  }
  const nlohmann::json cfg = nlohmann::json::parse(hf->config_json, nullptr, false);
  const int64_t vocab = cfg.is_object() ? cfg.value("vocab_size", int64_t(-1)) : -1;
  const auto modules = model.named_modules("", /*include_self=*/false);
  for (const std::string& name : models::lora_modules_to_save(model, lora)) {
    for (const auto& m : modules[name]->named_modules()) {
      const auto* e = m.value()->as<torch::nn::EmbeddingImpl>();
      UT_CHECK(e == nullptr || e->options.num_embeddings() != vocab,
               "model.lora.modules_to_save: ", name,
               " holds the token embedding that the tied output head also computes with "
               "(tie_word_embeddings): PEFT would train a copy of it and keep the head on the "
               "base weights, so no adapter folder could hold the run; leave it out or train "
               "the model without model.lora");
    }
  }
}

/// model.lora's adapters on `module`'s model (of type `type`), logged.
void add_lora(ObjectiveModule& module, const LoraOptions& lora, const std::string& type,
              uint64_t seed) {
  Model& model = *module.model();
  UT_CHECK(model.runs_lora_adapters(), "model.lora: model type '", type,
           "' does not run LoRA adapters (built in: transformer_lm, ", models::hf_family_list(),
           "); a model of "
           "your own calls its layers through unitrain::models::project and overrides "
           "Model::runs_lora_adapters (docs/api.md)");
  check_no_tied_module_to_save(model, lora);
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
      "model.lora: adapters of rank {} on {} layers (scaling {}){}: {} trainable parameters of "
      "{} ({:.3g}%), the rest frozen",
      lora.r, layers.size(), lora.scaling(),
      lora.modules_to_save.empty()
          ? std::string()
          : fmt::format(", modules_to_save {}", fmt::join(lora.modules_to_save, ", ")),
      trainable, all, 100.0 * double(trainable) / double(all)));
}

}  // namespace

std::shared_ptr<ObjectiveModule> build_module(
    const ConfigDriven& c, bool init, const std::function<void(const Model&)>& before_weights) {
  auto module = std::make_shared<ObjectiveModule>(c.run.model, c.run.objective);
  if (before_weights) before_weights(*module->model());
  const ActivationCheckpointingOptions& ac = c.model_keys.activation_checkpointing;
  UT_CHECK(!ac.enabled || module->model()->checkpoint_activations(ac.every),
           "model.activation_checkpointing.enabled: model type '", c.model_keys.type,
           "' has no blocks it can recompute (built in: transformer_lm, ", models::hf_family_list(),
           "); a model of your own "
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
  if (base && pretrained) load_pretrained_weights(module->weights(), *hf);
  if (base && init_from && !adapter) load_init_weights(*module, c.model_keys);
  if (lora) {
    add_lora(*module, *lora, c.model_keys.type, c.run.seed);
    if (init && adapter) load_peft_adapter(*module, *lora, *init_from, "model.init_from");
  }
  return module;
}

}  // namespace unitrain
