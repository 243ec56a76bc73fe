// Qwen2 and Qwen3: llama-shaped families (Qwen2ForCausalLM, Qwen3ForCausalLM), computed by
// LlamaImpl from their config.json (llama_config.cpp reads it): their model types and Hugging
// Face families.
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {
namespace {

const HfFamily kQwen2Family{"qwen2", &llama_model_name};
const HfFamily kQwen3Family{"qwen3", &llama_model_name};

}  // namespace

void register_qwen() {
  register_llama_family(
      kQwen2Family, &read_qwen2_config,
      "Qwen2 / Qwen2.5 causal LM from a Hugging Face folder (args.pretrained) or config.json "
      "(args.config), Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
  register_llama_family(
      kQwen3Family, &read_qwen3_config,
      "Qwen3 (dense) causal LM from a Hugging Face folder (args.pretrained) or config.json "
      "(args.config), Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
}

}  // namespace unitrain::models
