// Phi-3 (Phi3ForCausalLM, with rotary embeddings unscaled: the 4k-context models): a
// llama-shaped family whose q, k and v are one Linear (qkv_proj) and gate and up another
// (gate_up_proj), with an optional sliding window, computed by LlamaImpl from its config.json
// (llama_config.cpp reads it): its model type and Hugging Face family. LoRA targets take
// PEFT's names for it: qkv_proj, o_proj, gate_up_proj, down_proj.
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {
namespace {

const HfFamily kPhi3Family{"phi3", &llama_model_name};

}  // namespace

void register_phi3() {
  register_llama_family(
      kPhi3Family, &read_phi3_config,
      "Phi-3 causal LM (qkv_proj and gate_up_proj fused; rotary embeddings unscaled) from a "
      "Hugging Face folder (args.pretrained) or config.json (args.config), Hugging Face's "
      "parameter names: token ids [B, T] -> logits [B, T, vocab]");
}

}  // namespace unitrain::models
