// HfFamily: each Hugging Face family registered beside its model, found by its model_type.
#include "unitrain/models/hf_family.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/models/model.h"

namespace unitrain::models {
namespace {

TEST(HfFamily, EachBuiltInFamilyIsFoundByItsModelTypeWithItsNames) {
  register_builtin_models();
  EXPECT_EQ(hf_family_types(),
            (std::vector<std::string>{"gpt2", "llama", "qwen2", "qwen3", "mistral", "gemma",
                                      "gemma2", "gemma3_text", "phi3"}));
  EXPECT_EQ(hf_family_list(),
            "gpt2, llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3_text and phi3");
  EXPECT_EQ(hf_family_list(" or "),
            "gpt2, llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3_text or phi3");
  EXPECT_EQ(find_hf_family("gemma3"), nullptr);
  const HfFamily* gpt2 = find_hf_family("gpt2");
  ASSERT_NE(gpt2, nullptr);
  // The hub's gpt2 file names GPT2Model's tensors; its causal-mask buffers are no weights.
  EXPECT_EQ(gpt2->model_name("h.0.ln_1.weight", true), "transformer.h.0.ln_1.weight");
  EXPECT_EQ(gpt2->model_name("transformer.wte.weight", true), "transformer.wte.weight");
  EXPECT_EQ(gpt2->model_name("h.0.attn.bias", true), "");
  EXPECT_EQ(gpt2->model_name("lm_head.weight", true), "");  // the tied head's copy
  EXPECT_EQ(gpt2->model_name("lm_head.weight", false), "lm_head.weight");
  EXPECT_EQ(gpt2->file_name, nullptr);  // its parameters have transformers' names
  const HfFamily* llama = find_hf_family("llama");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->model_name("layers.1.self_attn.q_proj.weight", false),
            "model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(llama->model_name("model.layers.0.self_attn.rotary_emb.inv_freq", false), "");
  // Qwen's files name their tensors as Llama's.
  EXPECT_EQ(find_hf_family("qwen3")->model_name("model.layers.0.self_attn.q_norm.weight", false),
            "model.layers.0.self_attn.q_norm.weight");
  EXPECT_EQ(find_hf_family("qwen2")->model_name("lm_head.weight", true), "");
  // A second registration of a model_type is refused.
  EXPECT_TRUE(test::contains(test::error_of<ConfigError>([&] { register_hf_family(*llama); }),
                             "the Hugging Face family 'llama' is registered twice"));
}

}  // namespace
}  // namespace unitrain::models
