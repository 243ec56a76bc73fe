// Qwen2 and Qwen3: llama-shaped families (Qwen2ForCausalLM, Qwen3ForCausalLM), computed by
// LlamaImpl from their config.json (llama_config.cpp reads it): their model types and Hugging
// Face families.
#include "unitrain/core/options.h"
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain::models {
namespace {

const HfFamily kQwen2Family{"qwen2", &llama_model_name};
const HfFamily kQwen3Family{"qwen3", &llama_model_name};

}  // namespace

/// Qwen2 (Qwen2 and Qwen2.5): Llama's blocks with q/k/v biases.
class Qwen2Impl : public LlamaImpl {
 public:
  explicit Qwen2Impl(const HfModelOptions& options)
      : LlamaImpl(options, read_qwen2_config(options.config_path("model.args.")), kQwen2Family) {}
};

/// Qwen3 (dense): Llama's blocks with an RMSNorm over each head's q and k.
class Qwen3Impl : public LlamaImpl {
 public:
  explicit Qwen3Impl(const HfModelOptions& options)
      : LlamaImpl(options, read_qwen3_config(options.config_path("model.args.")), kQwen3Family) {}
};

void register_qwen() {
  register_declared_model<HfModelOptions, Qwen2Impl>(
      "qwen2",
      "Qwen2 / Qwen2.5 causal LM from a Hugging Face folder (args.pretrained) or config.json "
      "(args.config), Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
  register_hf_family(kQwen2Family);
  register_declared_model<HfModelOptions, Qwen3Impl>(
      "qwen3",
      "Qwen3 (dense) causal LM from a Hugging Face folder (args.pretrained) or config.json "
      "(args.config), Hugging Face's parameter names: token ids [B, T] -> logits [B, T, vocab]");
  register_hf_family(kQwen3Family);
}

}  // namespace unitrain::models
