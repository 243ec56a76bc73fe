#pragma once
// README.md of an exported folder: a Hugging Face model card as PEFT's save_pretrained writes
// one (YAML front matter the hub and its tools read: library_name, base_model, pipeline_tag,
// tags), then what was trained and how to load it.
#include <cstddef>
#include <string>
#include <vector>

#include "unitrain/core/train_state.h"

namespace unitrain {

struct LoraOptions;

/// What a model card says of one exported folder.
struct ModelCardFacts {
  std::string name;      ///< the folder's name (the model's, in the card's title and example)
  std::string run;       ///< the run that trained it (its `name`)
  std::string base;      ///< base_model: the pretrained folder (absolute); "" for a fresh model
  bool adapter = false;  ///< a PEFT adapter folder (library_name peft), else a whole model
  const LoraOptions* lora = nullptr;       ///< the run's model.lora (merged when not an adapter)
  std::vector<std::string> targets;        ///< the target_modules the adapters were put on by
  size_t adapted_layers = 0;               ///< layers that carried an adapter
  std::vector<std::string> saved_modules;  ///< modules trained in full (modules_to_save)
  TrainState trained;                      ///< the checkpoint's counters
};

/// The README.md text of `f`: front matter (library_name peft for an adapter, transformers
/// for a whole model; base_model when there is one; pipeline_tag text-generation; tags as PEFT
/// writes them: base_model:adapter:<base>, lora), then a short text: what was trained (r,
/// lora_alpha, targets, modules trained in full), for how many steps, and how to load it.
std::string model_card(const ModelCardFacts& f);

}  // namespace unitrain
