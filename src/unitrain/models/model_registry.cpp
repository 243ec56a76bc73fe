// The model registry and the built-in models (each registers itself: mlp.cpp, cnn.cpp, ...).
#include <mutex>

#include "unitrain/core/error.h"
#include "unitrain/core/train_module.h"
#include "unitrain/models/cnn.h"
#include "unitrain/models/hf_causal_lm.h"
#include "unitrain/models/mlp.h"
#include "unitrain/models/model.h"
#include "unitrain/models/torchscript_model.h"
#include "unitrain/models/transformer_lm.h"

namespace unitrain {

std::optional<std::string> Model::stage_refusal() const {
  return std::string(
      "distributed.pipeline_parallel: the model cannot be cut into stages (it declares no "
      "Model::forward_units and stage_refusal; built in: transformer_lm, gpt2 and the llama-shaped "
      "models); set it to 1");
}

torch::Tensor Model::forward_units(const std::vector<torch::Tensor>&, size_t, size_t,
                                   const torch::Tensor&) {
  throw ConfigError(*Model::stage_refusal());
}

std::vector<double> Model::unit_costs() { return parameter_elements(units()); }

Registry<ModelPtr>& model_registry() {
  static Registry<ModelPtr> registry("model");
  return registry;
}

void ModelSection::declare(Options<ModelSection>& o) {
  using T = ModelSection;
  o.field("init_from", &T::init_from)
      .free()
      .help(
          "a weights file whose tensors initialise the model: a state_dict "
          "(torch.save(model.state_dict()) in Python, or `unitrain export`) or a safetensors "
          "file (its name ends in .safetensors, or its bytes say so) or a checkpoint folder "
          "(runs/<name>/checkpoints/last, ZeRO 3's parts too); floating-point tensors of "
          "another precision (bf16, fp16) are converted to the model's; not used when resuming "
          "from a checkpoint (with model.lora it is the frozen base, read again on resume); with "
          "model.lora, a PEFT adapter folder (adapter_config.json) starts the adapters instead");
  declare_named_strings(o, "init_key_map", &T::init_key_map, R"({"transformer.": ""})")
      .def("{}")
      .free()
      .help(
          "prefix renames applied to init_from's tensor names before loading, e.g. "
          "{\"transformer.\": \"\"} drops a prefix, {\"\": \"net.\"} adds one; the longest "
          "matching prefix wins; a prefix that matches no name is an error");
  o.field("init_strict", &T::init_strict)
      .free()
      .help(
          "init_from must hold exactly the model's tensors; false loads the names that match and "
          "warns of the rest (shapes must still agree; a file with no matching name is an "
          "error)");
  o.section("activation_checkpointing", &T::activation_checkpointing)
      .help(
          "recompute blocks' activations in backward instead of keeping them from forward: less "
          "memory for about one more forward of those blocks (built-in transformer_lm, gpt2 and "
          "llama; in C++, "
          "unitrain::checkpointed around a model's own blocks)");
  o.section("lora", &T::lora)
      .fixed("a checkpoint's adapters were made with these settings")
      .help(
          "LoRA: low-rank adapters on the layers target_modules names, every other parameter "
          "but those of modules_to_save frozen (no gradient, no optimizer state, not in "
          "checkpoints); null = train all (docs/finetune.md)");
  // `type` is the component's key, declared with the `model` section.
  o.check([](T& m, const Config& c) { m.type = component_type(c); });
}

void ActivationCheckpointingOptions::declare(Options<ActivationCheckpointingOptions>& o) {
  using T = ActivationCheckpointingOptions;
  o.field("enabled", &T::enabled)
      .harmless()
      .help("on: the blocks below keep only their inputs; results are unchanged");
  o.field("every", &T::every)
      .min(1)
      .harmless()
      .help("which blocks: every N-th from the first (1 = all; 2 = half of them)");
}

std::shared_ptr<const Schema> model_section_schema() { return options_of<ModelSection>().schema(); }

void register_builtin_models() {
  static std::once_flag once;
  std::call_once(once, [] {
    models::register_mlp();
    models::register_cnn();
    models::register_transformer_lm();
    models::register_hf_causal_lms();
    models::register_torchscript_model();
  });
}

}  // namespace unitrain
