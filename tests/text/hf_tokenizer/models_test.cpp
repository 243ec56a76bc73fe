// The models of tokenizer.json (BPE, WordPiece, WordLevel), each alone through make_model. Expected
// ids follow Hugging Face tokenizers (tokenizers/src/models/{bpe,wordpiece,wordlevel}/*.rs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {
namespace {

using nlohmann::json;
using Ids = std::vector<int>;

std::unique_ptr<Model> model_of(const json& section) {
  const std::string file = "t.json";
  return make_model(JsonAt(section, "model", file));
}

Ids model_ids(const Model& model, std::string_view piece) {
  Ids ids;
  model.tokenize(piece, ids);
  return ids;
}

std::string model_error(const json& section) {
  return test::config_error_of([&] { model_of(section); });
}

/// A BPE over a, b, c with the merges given; ab, bc, abc in the vocabulary.
json model_bpe(const json& merges) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"vocab",
           {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"cd", 6}, {"d", 7}}},
          {"merges", merges}};
}

TEST(HfModel, BpeAppliesTheLowestRankedMergeFirstAndTheLeftmostOfEqualOnes) {
  EXPECT_EQ(model_ids(*model_of(model_bpe({"a b", "b c"})), "abc"), (Ids{3, 2}));
  EXPECT_EQ(model_ids(*model_of(model_bpe({"b c", "a b"})), "abc"), (Ids{0, 4}));
  EXPECT_EQ(model_ids(*model_of(model_bpe({"b c", "a b", "a bc"})), "abc"), (Ids{5}));
  // Merges as [left, right] pairs read as the strings do.
  EXPECT_EQ(
      model_ids(
          *model_of(model_bpe(json::array({json::array({"a", "b"}), json::array({"ab", "c"})}))),
          "abc"),
      (Ids{5}));
  // "a a" on aaa merges the leftmost pair (Word::merge_all orders equal ranks by position).
  json vocab_a = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"aa", 1}}}, {"merges", {"a a"}}};
  EXPECT_EQ(model_ids(*model_of(vocab_a), "aaa"), (Ids{1, 0}));
  EXPECT_EQ(model_ids(*model_of(vocab_a), "aaaa"), (Ids{1, 1}));
  const auto bpe = model_of(model_bpe({"a b"}));
  EXPECT_EQ(bpe->vocab().size(), 8u);
  EXPECT_EQ(bpe->vocab().at("cd"), 6);
  EXPECT_EQ(bpe->unk_id(), -1);
}

TEST(HfModel, BpeIgnoreMergesTakesAWholePieceFoundInTheVocabulary) {
  json bpe = model_bpe({"a b"});
  EXPECT_EQ(model_ids(*model_of(bpe), "cd"), (Ids{2, 7}));
  bpe["ignore_merges"] = true;
  EXPECT_EQ(model_ids(*model_of(bpe), "cd"), (Ids{6}));
  EXPECT_EQ(model_ids(*model_of(bpe), "cab"), (Ids{2, 3}));  // not whole: merged as before
}

TEST(HfModel, BpeUnknownCharactersAreUnkFusedOrDroppedWithoutUnk) {
  json bpe = model_bpe({"a b"});
  // No unk_token: nothing for x and y, and a, b then meet and merge.
  EXPECT_EQ(model_ids(*model_of(bpe), "axyb"), (Ids{3}));
  bpe["vocab"]["<unk>"] = 8;
  bpe["unk_token"] = "<unk>";
  EXPECT_EQ(model_ids(*model_of(bpe), "axyb"), (Ids{0, 8, 8, 1}));
  EXPECT_EQ(model_of(bpe)->unk_id(), 8);
  bpe["fuse_unk"] = true;
  EXPECT_EQ(model_ids(*model_of(bpe), "axyb"), (Ids{0, 8, 1}));
  EXPECT_EQ(model_ids(*model_of(bpe), "xaby"), (Ids{8, 3, 8}));
}

TEST(HfModel, BpeByteFallbackSpellsAnUnknownCharacterInItsByteTokens) {
  json bpe = model_bpe({"a b"});
  bpe["vocab"]["<unk>"] = 8;
  bpe["vocab"]["<0xC3>"] = 9;
  bpe["vocab"]["<0xA9>"] = 10;
  bpe["unk_token"] = "<unk>";
  bpe["byte_fallback"] = true;
  // é is C3 A9; € (E2 82 AC) has no byte tokens here, so it is unk.
  EXPECT_EQ(model_ids(*model_of(bpe), "ab\xC3\xA9"), (Ids{3, 9, 10}));
  EXPECT_EQ(model_ids(*model_of(bpe),
                      "a\xE2\x82\xAC"
                      "b"),
            (Ids{0, 8, 1}));
  bpe["byte_fallback"] = false;
  EXPECT_EQ(model_ids(*model_of(bpe), "ab\xC3\xA9"), (Ids{3, 8}));
}

TEST(HfModel, BpeContinuingSubwordPrefixAndEndOfWordSuffixMarkThePieces) {
  // The prefix on each character after the first, the suffix on the last; a merge's token is
  // left + right without its prefix (BpeBuilder::build).
  const json bpe = {
      {"type", "BPE"},
      {"continuing_subword_prefix", "##"},
      {"end_of_word_suffix", "</w>"},
      {"vocab", {{"a", 0}, {"##b", 1}, {"##c</w>", 2}, {"ab", 3}, {"abc</w>", 4}, {"a</w>", 5}}},
      {"merges", {"a ##b", "ab ##c</w>"}}};
  EXPECT_EQ(model_ids(*model_of(bpe), "abc"), (Ids{4}));
  EXPECT_EQ(model_ids(*model_of(bpe), "a"), (Ids{5}));
}

TEST(HfModel, WordPieceTakesTheLongestPrefixThenHashHashPieces) {
  const json wordpiece = {{"type", "WordPiece"},
                          {"unk_token", "[UNK]"},
                          {"continuing_subword_prefix", "##"},
                          {"max_input_chars_per_word", 8},
                          {"vocab",
                           {{"[UNK]", 0},
                            {"un", 1},
                            {"##aff", 2},
                            {"##able", 3},
                            {"a", 4},
                            {"ab", 5},
                            {"##bc", 6},
                            {"##c", 7},
                            {"caf", 8},
                            {"##\xC3\xA9", 9}}}};
  const auto model = model_of(wordpiece);
  EXPECT_EQ(model_ids(*model, "unaff"), (Ids{1, 2}));
  EXPECT_EQ(model_ids(*model, "abc"), (Ids{5, 7}));  // longest first: ab ##c, not a ##bc
  // A word with a part not found is unk alone, even after pieces were found.
  EXPECT_EQ(model_ids(*model, "unx"), (Ids{0}));
  // max_input_chars_per_word counts characters: unaffable (9) is too long; café is 4 (5 bytes).
  EXPECT_EQ(model_ids(*model, "unaffable"), (Ids{0}));
  json four = wordpiece;
  four["max_input_chars_per_word"] = 4;
  EXPECT_EQ(model_ids(*model_of(four), "caf\xC3\xA9"), (Ids{8, 9}));
  EXPECT_EQ(model_ids(*model_of(four), "unaff"), (Ids{0}));
  EXPECT_EQ(model_ids(*model, "unafable"), (Ids{0}));  // 8 chars, but ##f is missing
  EXPECT_EQ(model->unk_id(), 0);
  Ids appended = {42};
  model->tokenize("unx", appended);  // unk replaces only this word's ids
  EXPECT_EQ(appended, (Ids{42, 0}));
}

TEST(HfModel, WordLevelIsOneTokenAPieceOrUnk) {
  const auto model = model_of(
      {{"type", "WordLevel"}, {"unk_token", "<unk>"}, {"vocab", {{"<unk>", 0}, {"hello", 1}}}});
  EXPECT_EQ(model_ids(*model, "hello"), (Ids{1}));
  EXPECT_EQ(model_ids(*model, "hell"), (Ids{0}));
  EXPECT_EQ(model->unk_id(), 0);
}

TEST(HfModel, RefusesWhatItDoesNotReadNamingTheFileAndThePath) {
  EXPECT_TRUE(test::contains(model_error({{"type", "Magic"}, {"vocab", json::array()}}),
                             "tokenizer 't.json': model has model type 'Magic', which unitrain "
                             "does not implement (it reads BPE, Unigram, WordLevel, WordPiece)"));
  EXPECT_EQ(model_error(model_bpe({"a zz"})),
            "tokenizer 't.json': model.merges[0] has 'zz', which is not in model.vocab");
  EXPECT_EQ(model_error(model_bpe({"a b", "c d", "b a"})),
            "tokenizer 't.json': model.merges[2] makes 'ba', which is not in model.vocab");
  EXPECT_EQ(
      model_error(model_bpe({"a b c"})),
      "tokenizer 't.json': model.merges[0] should be two tokens parted by one space, not 'a b "
      "c'");
  json dropout = model_bpe({"a b"});
  dropout["dropout"] = 0.1;
  EXPECT_TRUE(test::contains(model_error(dropout),
                             "tokenizer 't.json': model.dropout is 0.1: BPE dropout"));
  json unk = model_bpe({"a b"});
  unk["unk_token"] = "<unk>";
  EXPECT_EQ(model_error(unk),
            "tokenizer 't.json': model.unk_token is '<unk>', which is not in model.vocab");
  EXPECT_EQ(
      model_error({{"type", "WordLevel"}, {"vocab", {{"a", -1}}}}),
      "tokenizer 't.json': model.vocab gives token 'a' the id -1; an id is an integer from 0");
  EXPECT_EQ(model_error({{"type", "WordPiece"}, {"unk_token", nullptr}, {"vocab", {{"a", 0}}}}),
            "tokenizer 't.json': model.unk_token is null; WordPiece needs an unk token");
}

}  // namespace
}  // namespace unitrain::hf
