// Where a run's text tools (generate, eval --text, the generate callback, export's tokenizer
// files) find its tokenizer: data.train.args.tokenizer, else the model folder's tokenizer.json or
// tokenizer.model; read through the keys the train set and the model declare.
#include "unitrain/engine/config/run_text.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

RunText run_text_with(const std::string& folder, const std::string& tokenizer) {
  register_builtins();
  return run_text(resolve_run_config(
      Config::from_string("model: {type: gpt2, args: {pretrained: " + folder +
                          "}}\ndata: {train: {type: tokens, args: {path: x.bin, seq_len: 4" +
                          (tokenizer.empty() ? "" : ", tokenizer: " + tokenizer) + "}}}\n")));
}

TEST(RunText, TheTrainSetsTokenizerElseTheModelFoldersElseNoneWithWhereItLooked) {
  const std::string folder = test::temp_dir();
  EXPECT_EQ(run_text_with(folder, "").tokenizer(), "");
  const std::string why = run_text_with(folder, "").no_tokenizer_text();
  EXPECT_TRUE(test::contains(why, "data.train.args.tokenizer")) << why;
  EXPECT_TRUE(test::contains(why, folder + " (model.args.pretrained)")) << why;
  std::ofstream(folder + "/tokenizer.model") << "x";
  EXPECT_EQ(run_text_with(folder, "").tokenizer(), folder + "/tokenizer.model");
  std::ofstream(folder + "/tokenizer.json") << "{}";
  EXPECT_EQ(run_text_with(folder, "").tokenizer(), folder + "/tokenizer.json");
  const RunText own = run_text_with(folder, "/data/own.json");
  EXPECT_EQ(own.tokenizer(), "/data/own.json");
  EXPECT_EQ(own.train_tokenizer, "/data/own.json");
  EXPECT_EQ(own.pretrained, folder);
}

TEST(RunText, ComponentsThatDeclareNoTokenizerGiveNone) {
  register_builtins();
  const RunText t = run_text(resolve_run_config(
      Config::from_string("model: {type: mlp, args: {sizes: [2, 2]}}\n"
                          "data: {train: {type: csv, args: {path: x.csv, target: y}}}\n")));
  EXPECT_EQ(t.tokenizer(), "");
  EXPECT_EQ(t.pretrained, "");
  EXPECT_TRUE(t.add_special_tokens);
  EXPECT_EQ(t.prompt_template(""), "{prompt}");
  EXPECT_FALSE(test::contains(t.no_tokenizer_text(), "model.args.pretrained"));
}

}  // namespace
}  // namespace unitrain
