// Gemma (GemmaForCausalLM), Gemma 2 (Gemma2ForCausalLM) and Gemma 3's text model
// (Gemma3ForCausalLM, model_type gemma3_text): llama-shaped families computed by LlamaImpl from
// their config.json (llama_config.cpp reads it). Gemma: GeGLU with the tanh GELU, RMSNorm
// scaling by 1 + w in float32, embeddings times sqrt(hidden_size), the head tied to them.
// Gemma 2 adds soft-capped scores and logits, local (sliding-window) and global layers
// alternating, norms after each sublayer and before the MLP, and scores scaled by
// query_pre_attn_scalar; Gemma 3 drops the soft caps for q/k norms, and its local layers (five
// in six) take their own rope base.
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {
namespace {

const HfFamily kGemmaFamily{"gemma", &llama_model_name};
const HfFamily kGemma2Family{"gemma2", &llama_model_name};
const HfFamily kGemma3Family{"gemma3_text", &llama_model_name};

}  // namespace

void register_gemma() {
  register_llama_family(
      kGemmaFamily, &read_gemma_config,
      "Gemma causal LM (the first Gemma: GeGLU, scaled embeddings, a tied head) from a Hugging "
      "Face folder (args.pretrained) or config.json (args.config), Hugging Face's parameter "
      "names: token ids [B, T] -> logits [B, T, vocab]");
  register_llama_family(
      kGemma2Family, &read_gemma2_config,
      "Gemma 2 causal LM (soft-capped scores and logits, local and global layers, sandwich "
      "norms) from a Hugging Face folder (args.pretrained) or config.json (args.config), "
      "Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
  register_llama_family(
      kGemma3Family, &read_gemma3_text_config,
      "Gemma 3 text causal LM (model_type gemma3_text: q/k norms, local layers with their own "
      "rope base) from a Hugging Face folder (args.pretrained) or config.json (args.config), "
      "Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
}

}  // namespace unitrain::models
