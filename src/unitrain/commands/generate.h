#pragma once
// load_text_generator: `unitrain generate`'s model and tokenizer, from a run's checkpoint or a
// Hugging Face folder, opened as every command opens a run (commands/open_run.h).
#include <string>

#include "unitrain/models/text_generator.h"

namespace unitrain {

/// A generator from `source`: a Hugging Face folder (config.json with model_type gpt2 or llama,
/// its weights, of any float precision, loaded as train loads model.args.pretrained, and
/// tokenizer.json), a run folder (its config.yaml and checkpoint `checkpoint`:
/// best, last or a folder) or a run's YAML. `tokenizer` overrides the folder's or the run's
/// (RunText::tokenizer). The model runs on the CPU in eval mode. ConfigError naming the
/// source when it is none of these, its model is not gpt2 or llama, or there is no tokenizer.
TextGenerator load_text_generator(const std::string& source, const std::string& checkpoint,
                                  const std::string& tokenizer);

}  // namespace unitrain
