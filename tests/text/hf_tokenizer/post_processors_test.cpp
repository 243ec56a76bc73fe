// The post-processors of tokenizer.json, each alone through make_post_processor. Expected ids
// follow Hugging Face tokenizers (tokenizers/src/processors/*.rs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {
namespace {

using nlohmann::json;
using Ids = std::vector<int>;

/// The ids `section` makes of `first` (and `second`, a pair), for a tokenizer of 10 ids.
Ids post_processor_ids(const json& section, const Ids& first, const Ids* second = nullptr) {
  const std::string file = "t.json";
  return make_post_processor(JsonAt(section, "post_processor", file), 10)->process(first, second);
}

std::string post_processor_error(const json& section) {
  const std::string file = "t.json";
  return test::config_error_of(
      [&] { make_post_processor(JsonAt(section, "post_processor", file), 10); });
}

json post_processor_special(const char* id) {
  return {{"SpecialToken", {{"id", id}, {"type_id", 0}}}};
}
json post_processor_sequence(const char* id) {
  return {{"Sequence", {{"id", id}, {"type_id", 0}}}};
}

/// BERT's template, as its tokenizer.json writes it: [CLS]=1, [SEP]=2.
json post_processor_bert_template() {
  const json cls = post_processor_special("[CLS]"), sep = post_processor_special("[SEP]");
  return {{"type", "TemplateProcessing"},
          {"single", {cls, post_processor_sequence("A"), sep}},
          {"pair", {cls, post_processor_sequence("A"), sep, post_processor_sequence("B"), sep}},
          {"special_tokens",
           {{"[CLS]", {{"id", "[CLS]"}, {"ids", {1}}, {"tokens", {"[CLS]"}}}},
            {"[SEP]", {{"id", "[SEP]"}, {"ids", {2}}, {"tokens", {"[SEP]"}}}}}}};
}

TEST(HfPostProcessor, TemplateProcessingPutsTheSpecialTokensWhereTheTemplateSays) {
  const json bert = post_processor_bert_template();
  EXPECT_EQ(post_processor_ids(bert, {5, 6}), (Ids{1, 5, 6, 2}));
  const Ids second = {7, 8};
  EXPECT_EQ(post_processor_ids(bert, {5}, &second), (Ids{1, 5, 2, 7, 8, 2}));
  EXPECT_EQ(post_processor_ids(bert, {}), (Ids{1, 2}));
  // A special token of several ids gives them all, in order; the sequences may come first.
  const json multi = {{"type", "TemplateProcessing"},
                      {"single", {post_processor_sequence("A"), post_processor_special("<eos>")}},
                      {"pair",
                       {post_processor_sequence("B"), post_processor_special("<eos>"),
                        post_processor_sequence("A")}},
                      {"special_tokens",
                       {{"<eos>", {{"id", "<eos>"}, {"ids", {9, 3}}, {"tokens", {"<", "eos>"}}}}}}};
  EXPECT_EQ(post_processor_ids(multi, {5}), (Ids{5, 9, 3}));
  EXPECT_EQ(post_processor_ids(multi, {5}, &second), (Ids{7, 8, 9, 3, 5}));
}

TEST(HfPostProcessor, BertAndRobertaProcessingWrapWithClsAndSep) {
  const json cls_sep = {{"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}}};
  json bert = cls_sep, roberta = cls_sep;
  bert["type"] = "BertProcessing";
  roberta["type"] = "RobertaProcessing";
  const Ids second = {7};
  EXPECT_EQ(post_processor_ids(bert, {5, 6}), (Ids{1, 5, 6, 2}));
  EXPECT_EQ(post_processor_ids(bert, {5}, &second), (Ids{1, 5, 2, 7, 2}));
  EXPECT_EQ(post_processor_ids(roberta, {5, 6}), (Ids{1, 5, 6, 2}));
  // RoBERTa: <s> A </s></s> B </s>.
  EXPECT_EQ(post_processor_ids(roberta, {5}, &second), (Ids{1, 5, 2, 2, 7, 2}));
}

TEST(HfPostProcessor, ByteLevelAddsNothingAndASequenceUsesItsOneTemplate) {
  const Ids second = {7};
  EXPECT_EQ(post_processor_ids({{"type", "ByteLevel"}, {"trim_offsets", true}}, {5, 6}),
            (Ids{5, 6}));
  EXPECT_EQ(post_processor_ids({{"type", "ByteLevel"}}, {5}, &second), (Ids{5, 7}));
  // Llama-3's: Sequence [ByteLevel, TemplateProcessing].
  const json sequence = {{"type", "Sequence"},
                         {"processors", {{{"type", "ByteLevel"}}, post_processor_bert_template()}}};
  EXPECT_EQ(post_processor_ids(sequence, {5}), (Ids{1, 5, 2}));
  EXPECT_EQ(post_processor_ids(sequence, {5}, &second), (Ids{1, 5, 2, 7, 2}));
  EXPECT_EQ(post_processor_ids({{"type", "Sequence"}, {"processors", {{{"type", "ByteLevel"}}}}},
                               {5}, &second),
            (Ids{5, 7}));
}

TEST(HfPostProcessor, RefusesWhatItDoesNotReadNamingTheFileAndThePath) {
  EXPECT_TRUE(test::contains(post_processor_error({{"type", "Magic"}}),
                             "tokenizer 't.json': post_processor has post_processor type 'Magic', "
                             "which unitrain does not implement"));
  json out_of_range = post_processor_bert_template();
  out_of_range["special_tokens"]["[SEP]"]["ids"] = {10};
  EXPECT_EQ(
      post_processor_error(out_of_range),
      "tokenizer 't.json': post_processor.special_tokens.[SEP].ids[0] is 10; a token id is an "
      "integer from 0 below 10 (the tokens of model.vocab and added_tokens: 10)");
  json missing = post_processor_bert_template();
  missing["single"][0] = post_processor_special("<s>");
  EXPECT_EQ(post_processor_error(missing),
            "tokenizer 't.json': post_processor.single[0].SpecialToken.id is '<s>', which "
            "post_processor.special_tokens lacks");
  json b_in_single = post_processor_bert_template();
  b_in_single["single"][1] = post_processor_sequence("B");
  EXPECT_EQ(post_processor_error(b_in_single),
            "tokenizer 't.json': post_processor.single[1].Sequence.id is 'B'");
  EXPECT_EQ(
      post_processor_error({{"type", "BertProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]"}}}),
      "tokenizer 't.json': post_processor.cls should be [token, id]");
  const json two = {{"type", "Sequence"},
                    {"processors",
                     {post_processor_bert_template(),
                      {{"type", "BertProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}}}}}};
  EXPECT_EQ(post_processor_error(two),
            "tokenizer 't.json': post_processor.processors[1] is a second post-processor that adds "
            "tokens (BertProcessing); unitrain reads a Sequence with one");
}

}  // namespace
}  // namespace unitrain::hf
