// What the config-driven commands read of a run's config, and the model they build from it: the
// folder's weights or not, a hook before any weight is read, LoRA adapters, and what is refused.
#include "unitrain/commands/config_driven.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "commands/tiny_lm.h"
#include "commands/tiny_run.h"
#include "test_util.h"
#include "unitrain/checkpoint/hf_folder.h"
#include "unitrain/models/lora.h"

namespace unitrain {
namespace {

/// Whether every tensor of `folder` is, value for value, one of `module`'s parameters.
bool holds_folder_weights(torch::nn::Module& module, const std::string& folder) {
  const auto params = module.parameters();
  for (const auto& [name, t] : read_hf_weights(folder, "test")) {
    bool found = false;
    for (const auto& p : params) found = found || (p.sizes() == t.sizes() && p.equal(t));
    if (!found) return false;
  }
  return true;
}

TEST(ConfigDriven, TheRunsSectionsAreReadOnce) {
  const ConfigDriven c =
      config_driven(test::loaded_run(test::tiny_run_yaml(test::temp_dir() + "/run")));
  EXPECT_EQ(c.model_keys.type, "mlp");
  EXPECT_FALSE(c.model_keys.lora.has_value());
  ASSERT_TRUE(c.data_keys.train.has_value());
  EXPECT_EQ(component_type(*c.data_keys.train), "synthetic");
  EXPECT_EQ(c.objective_keys.losses.size(), 1u);
  EXPECT_EQ(c.run.seed, 3u);
}

TEST(ConfigDriven, ARunWithoutTrainingDataIsRefusedByKey) {
  std::string yaml = test::tiny_run_yaml(test::temp_dir() + "/run");
  yaml.replace(yaml.find("train: {type: synthetic"), 5, "val");
  const Config config = test::loaded_run(yaml);
  const std::string e = test::config_error_of([&] { config_driven(config); });
  EXPECT_TRUE(test::contains(e, "missing key data.train")) << e;
}

TEST(BuildModule, AFoldersWeightsAreReadWhenInitialisingAndSeenAfterTheHook) {
  const std::string folder = test::gpt2_folder_in(torch::kFloat32);
  const ConfigDriven c = config_driven(test::loaded_run(
      test::tiny_lm_run_yaml(test::temp_dir() + "/run", folder, test::tiny_lm_text())));
  bool hooked = false;
  const auto module = build_module(c, /*init=*/true, [&](const Model& model) {
    hooked = true;
    // Built, not yet read: the run's own initialisation.
    EXPECT_FALSE(holds_folder_weights(const_cast<Model&>(model), folder));
  });
  EXPECT_TRUE(hooked);
  EXPECT_TRUE(holds_folder_weights(module->weights(), folder));
  // A checkpoint's weights will replace them: not read.
  EXPECT_FALSE(holds_folder_weights(build_module(c, /*init=*/false)->weights(), folder));
}

TEST(BuildModule, LoraAddsAdaptersOnTheFoldersFrozenWeightsEvenWithoutInit) {
  const std::string folder = test::gpt2_folder_in(torch::kFloat32);
  const ConfigDriven c = config_driven(test::loaded_run(
      test::tiny_lm_run_yaml(test::temp_dir() + "/run", folder, test::tiny_lm_text(), 2,
                             ", lora: {r: 2, alpha: 4, target_modules: [c_attn]}")));
  ASSERT_TRUE(c.model_keys.lora.has_value());
  // Checkpoints of a LoRA run hold the adapters alone: the base is read whenever it is built.
  const auto module = build_module(c, /*init=*/false);
  EXPECT_TRUE(holds_folder_weights(module->weights(), folder));
  const auto layers = models::lora_layers(module->weights());
  ASSERT_EQ(layers.size(), 1u);  // one block's c_attn
  int64_t trainable = 0;
  for (const auto& p : module->weights().named_parameters()) {
    const bool adapter = test::contains(p.key(), "lora_");
    EXPECT_EQ(p.value().requires_grad(), adapter) << p.key();
    if (adapter) trainable += p.value().numel();
  }
  EXPECT_EQ(trainable, 2 * (8 + 24));  // A [2, 8] and B [24, 2]
}

TEST(BuildModule, WhatTheModelCannotDoIsRefusedByKey) {
  const std::string run_dir = test::temp_dir() + "/run";
  const std::string mlp = test::tiny_run_yaml(run_dir);
  auto refusal = [&](const std::string& model_more) {
    std::string yaml = mlp;
    const std::string at = "{sizes: [4, 3]}";
    yaml.insert(yaml.find(at) + at.size(), model_more);
    const ConfigDriven c = config_driven(test::loaded_run(yaml));
    return test::config_error_of([&] { build_module(c, true); });
  };
  std::string e = refusal(", lora: {r: 2, target_modules: [fc]}");
  EXPECT_TRUE(test::contains(e, "model.lora: model type 'mlp' does not run LoRA adapters")) << e;
  e = refusal(", activation_checkpointing: {enabled: true}");
  EXPECT_TRUE(test::contains(e,
                             "model.activation_checkpointing.enabled: model type 'mlp' has "
                             "no blocks it can recompute"))
      << e;
  const std::string folder = test::gpt2_folder_in(torch::kFloat32);
  const ConfigDriven both = config_driven(test::loaded_run(test::tiny_lm_run_yaml(
      run_dir, folder, test::tiny_lm_text(), 2, ", init_from: " + folder + "/model.safetensors")));
  e = test::config_error_of([&] { build_module(both, true); });
  EXPECT_TRUE(test::contains(e,
                             "model.init_from and model.args.pretrained both give the "
                             "model's weights"))
      << e;
}

}  // namespace
}  // namespace unitrain
