// A Hugging Face folder's generator: its tokenizer's special prefix first (unless turned off), and
// its weights of any float precision loaded as train loads them. (Where a run's tokenizer is
// found: run_text_test.cpp.)
#include "unitrain/commands/generate.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "commands/tiny_lm.h"
#include "test_util.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/models/hf_causal_lm.h"

namespace unitrain {
namespace {

TEST(TextGenerator, PromptsStartWithTheTokenizersSpecialPrefixUnlessTurnedOff) {
  register_builtins();
  TextGenerator g = load_text_generator(test::gpt2_folder_in(torch::kFloat32), "last", "");
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
      load_text_generator(test::gpt2_folder_in(torch::kFloat32), "last", "").generate("a b", o).ids;
  ASSERT_FALSE(want.empty());
  for (const torch::Dtype dtype : {torch::kBFloat16, torch::kFloat16}) {
    const TextGenerator g = load_text_generator(test::gpt2_folder_in(dtype), "last", "");
    EXPECT_EQ(g.generate("a b", o).ids, want) << dtype;
  }
}

}  // namespace
}  // namespace unitrain
