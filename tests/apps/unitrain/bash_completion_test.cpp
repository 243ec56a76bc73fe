#include "apps/unitrain/bash_completion.h"

#include <gtest/gtest.h>

#include "unitrain/engine/config/load_config.h"

namespace unitrain {

TEST(BashCompletion, ConfigKeysComeFromTheSchemaAndTheRegistry) {
  const auto keys = config_key_paths(*run_schema());
  for (const char* key :
       {"name", "optimizer.lr", "data.loader.batch_size", "train.max_length", "model.type",
        "model.args", "model.args.sizes", "model.args.vocab", "optimizer.args.weight_decay",
        "data.train.args.path", "objective.losses", "checkpoint.keep_last"}) {
    EXPECT_EQ(keys.count(key), 1u) << key;
  }
  const auto& models = keys.at("model.type");
  EXPECT_NE(std::find(models.begin(), models.end(), "transformer_lm"), models.end());
  EXPECT_EQ(keys.at("train.test_mode"), (std::vector<std::string>{"true", "false"}));
  // A key with a list of allowed words completes to them.
  EXPECT_EQ(keys.at("train.precision"),
            (std::vector<std::string>{"fp32", "bf16-mixed", "fp16-mixed", "bf16-true"}));
  EXPECT_EQ(keys.at("train.on_nonfinite").size(), 3u);
  EXPECT_EQ(keys.at("train.divergence.action").size(), 3u);
  EXPECT_EQ(keys.count("objective.losses.type"), 0u);  // lists of sections are set whole
}

TEST(BashCompletion, ScriptHoldsEveryCommandOptionAndKey) {
  CompletionSpec spec;
  spec.global_options = {"--help", "--version"};
  CompletionCommand train{"train", {{"--plugin", true, true, {}}, {"--help", false, false, {}}}};
  train.positional_paths = true;
  train.config_overrides = true;
  CompletionCommand init{"init", {{"--task", true, false, {"classification", "image"}}}};
  spec.commands = {train, init};
  spec.config_keys = {{"optimizer.lr", {}}, {"model.type", {"cnn", "mlp"}}};
  const std::string s = bash_completion_script(spec);
  for (const char* part :
       {"complete -o default -F _unitrain unitrain",
        "_unitrain_config_keys='--model.type "
        "--optimizer.lr'",
        "    train)", "--plugin) COMPREPLY=($(compgen -f",
        "--task) COMPREPLY=($(compgen -W 'classification image'",
        "--model.type) COMPREPLY=($(compgen -W 'cnn mlp'", "'train init --help --version'"}) {
    EXPECT_NE(s.find(part), std::string::npos) << part << "\n" << s;
  }
}

}  // namespace unitrain
