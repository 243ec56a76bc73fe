#include "unitrain/commands/model_card.h"

#include <gtest/gtest.h>

#include "unitrain/models/lora.h"

namespace unitrain {
namespace {

TEST(ModelCard, AnAdaptersCardIsPeftsFrontMatterThenWhatTrained) {
  LoraOptions lora;
  lora.r = 4;
  lora.alpha = 8;
  ModelCardFacts f;
  f.name = "my-adapter";
  f.run = "sft";
  f.base = "/models/llama";
  f.adapter = true;
  f.lora = &lora;
  f.targets = {"all-linear"};
  f.adapted_layers = 14;
  f.saved_modules = {"lm_head"};
  f.trained.step = 7;
  const std::string card = model_card(f);
  EXPECT_EQ(card.rfind("---\nbase_model: /models/llama\nlibrary_name: peft\n", 0), 0u) << card;
  for (const char* said :
       {"  - base_model:adapter:/models/llama\n", "  - lora\n", "\n---\n\n# my-adapter\n",
        "r 4, lora_alpha 8 (scaling 2)", "target_modules: all-linear (14 layers)",
        "modules_to_save (trained in full): lm_head", "Trained for 7 steps",
        "AutoPeftModelForCausalLM.from_pretrained(\"my-adapter\")"}) {
    EXPECT_NE(card.find(said), std::string::npos) << said << "\n" << card;
  }
  f.adapter = false;
  f.lora = nullptr;
  const std::string full = model_card(f);
  EXPECT_NE(full.find("library_name: transformers"), std::string::npos) << full;
  EXPECT_EQ(full.find("lora"), std::string::npos) << full;
}

}  // namespace
}  // namespace unitrain
