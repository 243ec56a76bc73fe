// A Hugging Face folder's generator: its tokenizer's special prefix first (unless turned off), and
// its weights of any float precision loaded as train loads them. (Where a run's tokenizer is
// found: run_text_test.cpp.)
#include "unitrain/commands/generate.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain {
namespace {

/// A word-level tokenizer.json of 16 words whose post_processor (TemplateProcessing) puts <s>
/// (id 0) before a text, as Llama-3's puts <|begin_of_text|>.
std::string bos_tokenizer_json() {
  nlohmann::json vocab = {{"<s>", 0}};
  for (int i = 1; i < 16; ++i) vocab[std::string(1, char('a' + i - 1))] = i;
  const nlohmann::json bos = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  const nlohmann::json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  return nlohmann::json{
      {"version", "1.0"},
      {"added_tokens", {{{"id", 0}, {"content", "<s>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Whitespace"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {bos, a}},
        {"pair", {bos, a, a}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", nullptr},
      {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<s>"}}}}
      .dump();
}

/// A tiny gpt2 Hugging Face folder (seeded weights rounded to what float16 and bfloat16 both
/// hold) saved in `dtype`, with bos_tokenizer_json(): the same model whatever the dtype.
std::string gpt2_folder_in(torch::Dtype dtype) {
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/config.json",
                   R"({"model_type": "gpt2", "vocab_size": 16, "n_positions": 32, "n_embd": 8, )"
                   R"("n_layer": 1, "n_head": 2, "bos_token_id": 0, "eos_token_id": 15})");
  test::write_file(dir + "/tokenizer.json", bos_tokenizer_json());
  torch::manual_seed(5);
  models::HfModelOptions o;
  o.config = dir + "/config.json";
  models::Gpt2Impl model(o);
  NamedTensors weights;
  for (const auto& p : model.named_parameters()) {
    weights.emplace_back(p.key(),
                         p.value().detach().to(torch::kHalf).to(torch::kBFloat16).to(dtype));
  }
  write_hf_weights(dir, weights, uint64_t(1) << 30);
  return dir;
}

TEST(TextGenerator, PromptsStartWithTheTokenizersSpecialPrefixUnlessTurnedOff) {
  register_builtins();
  TextGenerator g = load_text_generator(gpt2_folder_in(torch::kFloat32), "last", "");
  models::GenerationOptions o;
  o.max_new_tokens = 2;
  EXPECT_EQ(g.generate("b c", o).prompt_ids, (std::vector<int64_t>{0, 2, 3}));
  g.add_special_tokens(false);
  EXPECT_EQ(g.generate("b c", o).prompt_ids, (std::vector<int64_t>{2, 3}));
}

TEST(TextGenerator, AFolderInBfloat16OrFloat16GeneratesAsItsFloat32Twin) {
  register_builtins();
  models::GenerationOptions o;
  o.max_new_tokens = 8;
  const std::vector<int64_t> want =
      load_text_generator(gpt2_folder_in(torch::kFloat32), "last", "").generate("a b", o).ids;
  ASSERT_FALSE(want.empty());
  for (const torch::Dtype dtype : {torch::kBFloat16, torch::kFloat16}) {
    const TextGenerator g = load_text_generator(gpt2_folder_in(dtype), "last", "");
    EXPECT_EQ(g.generate("a b", o).ids, want) << dtype;
  }
}

}  // namespace
}  // namespace unitrain
