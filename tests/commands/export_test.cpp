// `unitrain export`'s pieces: a trained run's model written as files others read.
#include "unitrain/commands/export.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>

#include "commands/tiny_run.h"
#include "test_util.h"
#include "unitrain/checkpoint/model_shards.h"
#include "unitrain/checkpoint/safetensors.h"
#include "unitrain/commands/train_from_config.h"

namespace unitrain {
namespace {

TEST(ExportCheckpoint, SafetensorsHoldTheCheckpointsTensorsByTheirNames) {
  const std::string run_dir = test::temp_dir() + "/run";
  const Config config = test::loaded_run(test::tiny_run_yaml(run_dir));
  train_from_config(config);
  const std::string out = test::temp_dir() + "/model.safetensors";
  const std::string dir = export_checkpoint(config, "last", "safetensors", out, "trained");
  const NamedTensors saved = read_model_state(dir);
  const SafetensorsContent written = read_safetensors(out, "out");
  EXPECT_EQ(written.metadata.at("format"), "pt");
  ASSERT_EQ(written.tensors.size(), saved.size());
  std::map<std::string, torch::Tensor> by_name(written.tensors.begin(), written.tensors.end());
  for (const auto& [name, tensor] : saved) {
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_TRUE(torch::equal(by_name[name], tensor)) << name;
  }
}

TEST(ExportCheckpoint, BadFormatsAndFilesAreRefusedBeforeTheModelIsRead) {
  const std::string run_dir = test::temp_dir() + "/run";
  const Config config = test::loaded_run(test::tiny_run_yaml(run_dir));
  train_from_config(config);
  std::string e = test::config_error_of([&] { export_checkpoint(config, "last", "onnx", "m"); });
  EXPECT_TRUE(test::contains(e, "--format onnx: give state_dict")) << e;
  const std::string folder = test::temp_dir();
  e = test::config_error_of([&] { export_checkpoint(config, "last", "state_dict", folder); });
  EXPECT_TRUE(test::contains(e, " is a folder: give the file to write")) << e;
  e = test::config_error_of(
      [&] { export_checkpoint(config, "last", "state_dict", folder + "/no/model.pt"); });
  EXPECT_TRUE(test::contains(e, "does not exist (create it first)")) << e;
  e = test::config_error_of(
      [&] { export_checkpoint(config, "last", "safetensors", folder + "/m", "trained", 1, true); });
  EXPECT_TRUE(test::contains(e, "--merge: only --format hf")) << e;
}

}  // namespace
}  // namespace unitrain
