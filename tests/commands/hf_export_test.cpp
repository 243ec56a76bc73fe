#include "unitrain/commands/hf_export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "unitrain/core/config.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

namespace fs = std::filesystem;

std::string text_of_export_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HfExport, TokenizerFilesComeFromTheFolderElseFromBesideTheRunsTokenizer) {
  const std::string dir = test::temp_dir() + "/hf_export_tokenizer";
  fs::remove_all(dir);
  for (const char* d : {"/folder", "/run_tok", "/out1", "/out2"}) fs::create_directories(dir + d);
  test::write_file(dir + "/folder/tokenizer.json", "{\"folder\": 1}");
  test::write_file(dir + "/folder/tokenizer_config.json", "{}");
  test::write_file(dir + "/run_tok/mine.json", "{\"run\": 1}");
  test::write_file(dir + "/run_tok/tokenizer_config.json", "{\"eos_token\": \"b\"}");
  test::write_file(dir + "/run_tok/special_tokens_map.json", "{}");
  register_builtins();
  const Config config = resolve_run_config(Config::from_string(
      "model: {type: mlp, args: {sizes: [2, 2]}}\ndata: {train: {type: tokens, args: {path: x.bin, "
      "seq_len: 4, tokenizer: " +
      dir + "/run_tok/mine.json}}}"));
  EXPECT_EQ(copy_tokenizer_files(dir + "/folder", config, dir + "/out1"),
            (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"}));
  EXPECT_EQ(text_of_export_file(dir + "/out1/tokenizer.json"), "{\"folder\": 1}");
  EXPECT_EQ(copy_tokenizer_files("", config, dir + "/out2"),
            (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json",
                                      "special_tokens_map.json"}));
  EXPECT_EQ(text_of_export_file(dir + "/out2/tokenizer.json"), "{\"run\": 1}");
  EXPECT_EQ(text_of_export_file(dir + "/out2/tokenizer_config.json"), "{\"eos_token\": \"b\"}");
}

}  // namespace
}  // namespace unitrain
