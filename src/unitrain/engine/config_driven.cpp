#include "unitrain/engine/config_driven.h"

#include "unitrain/core/error.h"
#include "unitrain/engine/setup/init_weights.h"

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

std::shared_ptr<ObjectiveModule> build_module(const ConfigDriven& c, bool init) {
  auto module = std::make_shared<ObjectiveModule>(c.run.model, c.run.objective);
  const ActivationCheckpointingOptions& ac = c.model_keys.activation_checkpointing;
  UT_CHECK(!ac.enabled || module->model()->checkpoint_activations(ac.every),
           "model.activation_checkpointing.enabled: model type '", c.model_keys.type,
           "' has no blocks it can recompute (built in: transformer_lm, gpt2, llama); a model of your own "
           "wraps its blocks in unitrain::checkpointed (docs/api.md), or set enabled: false");
  const HfModelInfo* hf = module->model()->hf_info();
  const bool pretrained = hf != nullptr && !hf->pretrained.empty();
  UT_CHECK(!pretrained || !c.model_keys.init_from, "model.init_from and model.args.pretrained "
           "both give the model's weights: keep one (model.args.config gives a Hugging Face "
           "model's shape without its weights)");
  if (init && pretrained) load_pretrained_weights(*module, *hf);
  if (init && c.model_keys.init_from) load_init_weights(*module, c.model_keys);
  return module;
}

}  // namespace unitrain
