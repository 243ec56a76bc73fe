// The generate callback puts a prompt into tokens as the run's train set did: its template (an
// instruct set's, the dataset's default when not given) and its add_special_tokens (RunText).
#include "unitrain/engine/callbacks/generate_samples.h"

#include <gtest/gtest.h>

#include "unitrain/core/config.h"
#include "unitrain/data/instruct_dataset.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"
#include "unitrain/engine/config/run_text.h"

namespace unitrain {
namespace {

RunText text_of_train_set(const std::string& train) {
  register_builtins();
  return run_text(resolve_run_config(Config::from_string(
      "model: {type: mlp, args: {sizes: [2, 2]}}\ndata: {train: " + train + "}\n")));
}

TEST(GenerateSamples, PromptsAreFormattedAsTheTrainSetFormattedThem) {
  const RunText instruct =
      text_of_train_set("{type: instruct, args: {paths: [a.jsonl], tokenizer: t.json}}");
  EXPECT_EQ(instruct.prompt_template(""), InstructOptions{}.template_text);
  EXPECT_TRUE(instruct.add_special_tokens);
  const RunText own = text_of_train_set(
      "{type: instruct, args: {paths: [a.jsonl], tokenizer: t.json, template: 'Q {prompt} A', "
      "add_special_tokens: false}}");
  EXPECT_EQ(own.prompt_template(""), "Q {prompt} A");
  EXPECT_FALSE(own.add_special_tokens);
  EXPECT_EQ(instruct.prompt_template("<{prompt}>"), "<{prompt}>");
  const RunText text = text_of_train_set(
      "{type: text, args: {paths: [a.txt], tokenizer: t.json, add_special_tokens: false}}");
  EXPECT_EQ(text.prompt_template(""), "{prompt}");
  EXPECT_FALSE(text.add_special_tokens);
  EXPECT_TRUE(
      text_of_train_set("{type: tokens, args: {path: x.bin, seq_len: 4}}").add_special_tokens);
}

}  // namespace
}  // namespace unitrain
