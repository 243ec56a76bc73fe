// Gemma (GemmaForCausalLM, the first Gemma): a llama-shaped family with GeGLU (the tanh GELU),
// RMSNorm scaling by 1 + w in float32, embeddings scaled by sqrt(hidden_size) and the head tied
// to them, computed by LlamaImpl from its config.json (llama_config.cpp reads it): its model
// type and Hugging Face family. (Gemma 2 and 3, model_type gemma2 / gemma3, compute more:
// soft-capping, local and global layers, extra norms.)
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {
namespace {

const HfFamily kGemmaFamily{"gemma", &llama_model_name};

}  // namespace

void register_gemma() {
  register_llama_family(
      kGemmaFamily, &read_gemma_config,
      "Gemma causal LM (the first Gemma: GeGLU, scaled embeddings, a tied head) from a Hugging "
      "Face folder (args.pretrained) or config.json (args.config), Hugging Face's parameter "
      "names: token ids [B, T] -> logits [B, T, vocab]");
}

}  // namespace unitrain::models
