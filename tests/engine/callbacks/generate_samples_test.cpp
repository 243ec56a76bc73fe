// The generate callback puts a prompt into tokens as the run's train set did: its template (an
// instruct set's, the dataset's default when not given) and its add_special_tokens.
#include "unitrain/engine/callbacks/generate_samples.h"

#include <gtest/gtest.h>

#include "unitrain/core/config.h"
#include "unitrain/data/instruct_dataset.h"

namespace unitrain {
namespace {

TrainPromptFormat format_of(const std::string& train, const std::string& given = "") {
  return train_prompt_format(Config::from_string("data: {train: " + train + "}\n"), given);
}

TEST(GenerateSamples, PromptsAreFormattedAsTheTrainSetFormattedThem) {
  const TrainPromptFormat instruct = format_of("{type: instruct, args: {paths: [a.jsonl]}}");
  EXPECT_EQ(instruct.template_text, InstructOptions{}.template_text);
  EXPECT_TRUE(instruct.add_special_tokens);
  const TrainPromptFormat own =
      format_of("{type: instruct, args: {template: 'Q {prompt} A', add_special_tokens: false}}");
  EXPECT_EQ(own.template_text, "Q {prompt} A");
  EXPECT_FALSE(own.add_special_tokens);
  EXPECT_EQ(format_of("{type: instruct, args: {}}", "<{prompt}>").template_text, "<{prompt}>");
  const TrainPromptFormat text = format_of("{type: text, args: {add_special_tokens: false}}");
  EXPECT_EQ(text.template_text, "{prompt}");
  EXPECT_FALSE(text.add_special_tokens);
  EXPECT_TRUE(format_of("{type: tokens}").add_special_tokens);
}

}  // namespace
}  // namespace unitrain
