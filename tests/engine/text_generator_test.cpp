// Where a run's text tools (generate, eval --text, the generate callback) find its tokenizer:
// data.train.args.tokenizer, else the model folder's tokenizer.json or tokenizer.model.
#include "unitrain/engine/text_generator.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "unitrain/core/config.h"

namespace unitrain {
namespace {

Config run_with(const std::string& folder, const std::string& tokenizer) {
  return Config::from_string("model: {type: gpt2, args: {pretrained: " + folder +
                             "}}\ndata: {train: {type: tokens, args: {path: x.bin" +
                             (tokenizer.empty() ? "" : ", tokenizer: " + tokenizer) + "}}}\n");
}

TEST(RunTokenizer, TheDataOnesElseTheModelFoldersElseNoneWithWhereItLooked) {
  const std::string folder = test::temp_dir();
  EXPECT_EQ(run_tokenizer(run_with(folder, "")), "");
  const std::string why = no_tokenizer_text(run_with(folder, ""));
  EXPECT_TRUE(test::contains(why, "data.train.args.tokenizer")) << why;
  EXPECT_TRUE(test::contains(why, folder + " (model.args.pretrained)")) << why;
  std::ofstream(folder + "/tokenizer.model") << "x";
  EXPECT_EQ(run_tokenizer(run_with(folder, "")), folder + "/tokenizer.model");
  std::ofstream(folder + "/tokenizer.json") << "{}";
  EXPECT_EQ(run_tokenizer(run_with(folder, "")), folder + "/tokenizer.json");
  EXPECT_EQ(run_tokenizer(run_with(folder, "/data/own.json")), "/data/own.json");
}

}  // namespace
}  // namespace unitrain
