// LoRA adapters as PEFT's folder: written with PEFT's names and fields, read back into the model
// that made them (also as model.init_from), and refused when they do not fit it.
#include "unitrain/commands/peft_adapter.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands/tiny_lm.h"
#include "commands/tiny_run.h"
#include "test_util.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/commands/config_driven.h"
#include "unitrain/core/file_bytes.h"
#include "unitrain/models/lora.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

struct LoraRun {
  std::string folder;
  Config config;
  ConfigDriven keys;
};

LoraRun lora_run(const std::string& lora = "{r: 2, alpha: 4, target_modules: [c_attn]}",
                 const std::string& folder_given = "", const std::string& more = "") {
  const std::string folder =
      folder_given.empty() ? test::gpt2_folder_in(torch::kFloat32) : folder_given;
  Config config = test::loaded_run(test::tiny_lm_run_yaml(
      test::temp_dir() + "/run", folder, test::tiny_lm_text(), 2, ", lora: " + lora + more));
  ConfigDriven keys = config_driven(config);
  return {folder, std::move(config), std::move(keys)};
}

/// The adapters' tensors by name, after B is given values (it starts at zero).
std::map<std::string, torch::Tensor> adapters(ObjectiveModule& module, bool fill = false) {
  std::map<std::string, torch::Tensor> out;
  torch::NoGradGuard no_grad;
  for (const auto& p : module.weights().named_parameters()) {
    if (!test::contains(p.key(), "lora_")) continue;
    if (fill) p.value().uniform_(-1, 1);
    out[p.key()] = p.value().detach().clone();
  }
  return out;
}

TEST(PeftAdapter, AFolderWrittenIsPeftsAndReadsBackIntoTheModel) {
  const LoraRun run = lora_run();
  const auto trained = build_module(run.keys, true);
  const auto want = adapters(*trained, /*fill=*/true);
  ASSERT_EQ(want.size(), 2u);
  const std::string out = test::temp_dir() + "/adapter";
  write_peft_folder(*trained, *run.keys.model_keys.lora, run.folder, out, run.config);
  EXPECT_TRUE(is_peft_adapter_folder(out));
  EXPECT_FALSE(is_peft_adapter_folder(run.folder));
  EXPECT_TRUE(fs::is_regular_file(out + "/tokenizer.json"));
  const auto cfg = nlohmann::json::parse(read_file_bytes(out + "/adapter_config.json", "test"));
  EXPECT_EQ(cfg["peft_type"], "LORA");
  EXPECT_EQ(cfg["task_type"], "CAUSAL_LM");
  EXPECT_EQ(cfg["r"], 2);
  EXPECT_EQ(cfg["lora_alpha"], 4);
  EXPECT_EQ(cfg["target_modules"], nlohmann::json({"c_attn"}));
  EXPECT_EQ(cfg["fan_in_fan_out"], true);  // GPT-2's Conv1D
  EXPECT_EQ(cfg["base_model_name_or_path"], fs::absolute(run.folder).lexically_normal().string());
  for (const auto& [name, t] :
       read_safetensors(out + "/adapter_model.safetensors", "test").tensors) {
    EXPECT_EQ(name.rfind("base_model.model.", 0), 0u) << name;
    EXPECT_TRUE(want.count(name.substr(17))) << name;
  }
  // A fresh model (B zero) gets the written adapters.
  const auto fresh = build_module(run.keys, true);
  load_peft_adapter(*fresh, *run.keys.model_keys.lora, out, "test");
  for (const auto& [name, t] : adapters(*fresh)) EXPECT_TRUE(t.equal(want.at(name))) << name;
  // And as model.init_from, when the run is initialised (not when a checkpoint follows).
  const LoraRun from =
      lora_run("{r: 2, alpha: 4, target_modules: [c_attn]}", run.folder, ", init_from: " + out);
  for (const auto& [name, t] : adapters(*build_module(from.keys, true))) {
    EXPECT_TRUE(t.equal(want.at(name))) << name;
  }
  for (const auto& [name, t] : adapters(*build_module(from.keys, false))) {
    if (test::contains(name, "lora_B")) EXPECT_EQ(t.abs().sum().item<double>(), 0) << name;
  }
}

TEST(PeftAdapter, AFolderOfOtherSettingsIsRefusedByTheFieldThatDiffers) {
  const LoraRun run = lora_run();
  const auto trained = build_module(run.keys, true);
  const std::string out = test::temp_dir() + "/adapter";
  write_peft_folder(*trained, *run.keys.model_keys.lora, run.folder, out, run.config);
  const LoraRun rank4 = lora_run("{r: 4, alpha: 4, target_modules: [c_attn]}", run.folder);
  const std::string e = test::config_error_of([&] {
    load_peft_adapter(*build_module(rank4.keys, true), *rank4.keys.model_keys.lora, out,
                      "model.init_from");
  });
  EXPECT_TRUE(test::contains(e, out + "/adapter_config.json")) << e;
  EXPECT_TRUE(
      test::contains(e, "r is 2, model.lora.r is 4: give model.lora the adapter's settings"))
      << e;
}

TEST(PeftAdapter, AModelWithoutAdaptersHasNoFolderToWrite) {
  const std::string folder = test::gpt2_folder_in(torch::kFloat32);
  const Config config = test::loaded_run(
      test::tiny_lm_run_yaml(test::temp_dir() + "/run", folder, test::tiny_lm_text()));
  const auto module = build_module(config_driven(config), true);
  LoraOptions lora;
  lora.target_modules = {"c_attn"};
  const std::string out = test::temp_dir() + "/adapter";
  const std::string e =
      test::config_error_of([&] { write_peft_folder(*module, lora, folder, out, config); });
  EXPECT_TRUE(test::contains(e, "the run's model has no LoRA adapters")) << e;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace unitrain
