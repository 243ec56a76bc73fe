// Mistral (MistralForCausalLM): a llama-shaped family with sliding-window attention (each token
// attends the last sliding_window tokens; null: all of them, as Mistral 7B v0.2 and later),
// computed by LlamaImpl from its config.json (llama_config.cpp reads it): its model type and
// Hugging Face family.
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {
namespace {

const HfFamily kMistralFamily{"mistral", &llama_model_name};

}  // namespace

void register_mistral() {
  register_llama_family(
      kMistralFamily, &read_mistral_config,
      "Mistral causal LM (sliding-window attention) from a Hugging Face folder "
      "(args.pretrained) or config.json (args.config), Hugging Face's parameter names: token "
      "ids [B, T] -> logits [B, T, vocab]");
}

}  // namespace unitrain::models
