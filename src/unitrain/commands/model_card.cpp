#include "unitrain/commands/model_card.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "unitrain/models/lora.h"

namespace unitrain {
namespace {

std::string front_matter(const ModelCardFacts& f) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  if (!f.base.empty()) e << YAML::Key << "base_model" << YAML::Value << f.base;
  e << YAML::Key << "library_name" << YAML::Value << (f.adapter ? "peft" : "transformers");
  e << YAML::Key << "pipeline_tag" << YAML::Value << "text-generation";
  e << YAML::Key << "tags" << YAML::Value << YAML::BeginSeq;
  if (f.adapter && !f.base.empty()) e << "base_model:adapter:" + f.base;
  if (f.lora != nullptr) e << "lora";
  e << "unitrain" << YAML::EndSeq << YAML::EndMap;
  return std::string("---\n") + e.c_str() + "\n---\n";
}

/// "r 8, lora_alpha 16 (scaling 2), lora_dropout 0.05" and the layers.
std::string lora_lines(const ModelCardFacts& f) {
  const LoraOptions& l = *f.lora;
  std::string out = fmt::format(
      "- LoRA: r {}, lora_alpha {} (scaling {}{}), lora_dropout {}\n"
      "- target_modules: {} ({} layers)\n",
      l.r, l.alpha, l.scaling(), l.rslora ? ", rslora" : "", l.dropout, fmt::join(f.targets, ", "),
      f.adapted_layers);
  if (!f.saved_modules.empty()) {
    out +=
        fmt::format("- modules_to_save (trained in full): {}\n", fmt::join(f.saved_modules, ", "));
  }
  return out;
}

}  // namespace

std::string model_card(const ModelCardFacts& f) {
  const std::string base = f.base.empty() ? "a model trained from scratch" : "`" + f.base + "`";
  std::string what;
  if (f.adapter) {
    what = fmt::format("A LoRA adapter (PEFT's layout) for {}, trained with unitrain (run `{}`).",
                       base, f.run);
  } else if (f.lora != nullptr) {
    what = fmt::format(
        "{} fine-tuned with unitrain (run `{}`) through LoRA adapters, merged into its weights.",
        f.base.empty() ? "A model" : "The model " + base, f.run);
  } else {
    what = f.base.empty()
               ? fmt::format("A model trained with unitrain (run `{}`).", f.run)
               : fmt::format("The model {} fine-tuned with unitrain (run `{}`).", base, f.run);
  }
  std::string text = front_matter(f) + "\n# " + f.name + "\n\n" + what + "\n\n";
  if (f.lora != nullptr) text += lora_lines(f);
  text += fmt::format("- Trained for {} steps ({} epochs, {} samples).\n", f.trained.step,
                      f.trained.epoch, f.trained.samples);
  const char* loader = f.adapter ? "peft import AutoPeftModelForCausalLM"
                                 : "transformers import AutoModelForCausalLM";
  text +=
      fmt::format("\n## Use\n\n```python\nfrom {}\n\nmodel = {}.from_pretrained(\"{}\")\n```\n",
                  loader, f.adapter ? "AutoPeftModelForCausalLM" : "AutoModelForCausalLM", f.name);
  if (f.adapter) {
    text += "\nThe base model is read from `base_model_name_or_path` in adapter_config.json.\n";
  }
  return text;
}

}  // namespace unitrain
