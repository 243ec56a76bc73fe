// The Unigram model of tokenizer.json alone through make_model. Expected ids follow Hugging Face
// tokenizers (tokenizers/src/models/unigram/model.rs and its tests); parity with the Rust
// tokenizers on real files is hf_tokenizer_test.cpp's.
#include <gtest/gtest.h>

#include <limits>
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

/// A "vocab" of [piece, score] pairs.
json unigram_pieces(std::initializer_list<std::pair<const char*, double>> pieces) {
  json out = json::array();
  for (const auto& [piece, score] : pieces) out.push_back(json::array({piece, score}));
  return out;
}

std::unique_ptr<Model> unigram_of(const json& vocab, const json& unk_id = 0,
                                  bool byte_fallback = false) {
  const std::string file = "t.json";
  const json section = {
      {"type", "Unigram"}, {"vocab", vocab}, {"unk_id", unk_id}, {"byte_fallback", byte_fallback}};
  return make_model(JsonAt(section, "model", file));
}

Ids unigram_ids(const Model& model, std::string_view piece) {
  Ids ids;
  model.tokenize(piece, ids);
  return ids;
}

std::string unigram_error(const json& vocab, const json& unk_id = 0) {
  return test::config_error_of([&] { unigram_of(vocab, unk_id); });
}

/// Hugging Face's own example (Unigram::encode's documentation).
const json kUnigramAbcd = unigram_pieces({{"<unk>", 0.0},
                                          {"a", 0.0},
                                          {"b", 0.0},
                                          {"c", 0.0},
                                          {"d", 0.0},
                                          {"cd", 1.0},
                                          {"ab", 2.0},
                                          {"abc", 5.0},
                                          {"abcd", 10.0}});

TEST(HfUnigram, SplitsWhereTheScoresSumHighestAndFusesUnknownCharacters) {
  const auto model = unigram_of(kUnigramAbcd);
  // abcd | a | cd | xx (two unknown characters, one unk)
  EXPECT_EQ(unigram_ids(*model, "abcdacdxx"), (Ids{8, 1, 5, 0}));
  EXPECT_EQ(unigram_ids(*model, "abc"), (Ids{7}));
  EXPECT_EQ(unigram_ids(*model, "x\xC3\xA9y"), (Ids{0}));  // x é y: one unk
  EXPECT_EQ(unigram_ids(*model, "xaxx"), (Ids{0, 1, 0}));
  EXPECT_EQ(unigram_ids(*model, ""), (Ids{}));
  EXPECT_EQ(model->unk_id(), 0);
  EXPECT_EQ(model->vocab().at("abcd"), 8);
}

TEST(HfUnigram, AnUnknownCharacterScoresTenBelowTheLowestPiece) {
  // The lowest piece scores -5, an unknown character -15. "ab" as a + b scores -2, as ab -5;
  // "ax" is a + unk.
  const auto model =
      unigram_of(unigram_pieces({{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"ab", -5.0}}));
  EXPECT_EQ(unigram_ids(*model, "ab"), (Ids{1, 2}));
  EXPECT_EQ(unigram_ids(*model, "ax"), (Ids{1, 0}));
  // Ties keep the split found first: ab (-2, found from the start) against a + b (-2).
  const auto tie =
      unigram_of(unigram_pieces({{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"ab", -2.0}}));
  EXPECT_EQ(unigram_ids(*tie, "ab"), (Ids{3}));
}

TEST(HfUnigram, ByteFallbackSpellsAnUnknownSpanInItsBytesWhenAllAreInTheVocabulary) {
  json vocab = unigram_pieces({{"<unk>", 0.0}, {"a", -1.0}});
  for (int b = 0; b < 256; ++b) {
    if (b == 0xA9) continue;  // no <0xA9>
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab.push_back(json::array({name, -2.0}));
  }
  const auto model = unigram_of(vocab, 0, true);
  const auto byte = [](int b) { return 2 + (b < 0xA9 ? b : b - 1); };
  EXPECT_EQ(unigram_ids(*model, "axy"), (Ids{1, byte('x'), byte('y')}));
  EXPECT_EQ(unigram_ids(*model, "\xC3\xA9"), (Ids{0}));  // é needs <0xA9>: unk
  // Without byte_fallback the same span is unk.
  EXPECT_EQ(unigram_ids(*unigram_of(vocab, 0, false), "axy"), (Ids{1, 0}));
}

TEST(HfUnigram, WithoutUnkIdAnUncoveredCharacterIsAnErrorNamingTheFile) {
  const auto model = unigram_of(unigram_pieces({{"a", -1.0}}), nullptr);
  EXPECT_EQ(model->unk_id(), -1);
  EXPECT_EQ(unigram_ids(*model, "aa"), (Ids{0, 0}));
  const std::string message = test::error_of<TrainError>([&] { unigram_ids(*model, "ab"); });
  EXPECT_TRUE(test::contains(message, "tokenizer 't.json'")) << message;
  EXPECT_TRUE(test::contains(message, "model.unk_id is null")) << message;
}

TEST(HfUnigram, RefusesBadPiecesAndUnkIdsNamingThePath) {
  EXPECT_TRUE(test::contains(unigram_error(json::array()), "model.vocab is empty"));
  const auto with = [](const json& second) {
    return json::array({json::array({"<unk>", 0.0}), second});
  };
  EXPECT_TRUE(test::contains(unigram_error(with(json::array({"a"}))),
                             "model.vocab[1] is [\"a\"]; a Unigram piece is [text, finite score]"));
  EXPECT_TRUE(test::contains(unigram_error(with(json::array({"a", "high"}))), "model.vocab[1] is"));
  EXPECT_TRUE(test::contains(unigram_error(with(json::array({1, 0.5}))), "model.vocab[1] is"));
  EXPECT_TRUE(test::contains(
      unigram_error(with(json::array({"a", std::numeric_limits<double>::infinity()}))),
      "model.vocab[1] is"));
  EXPECT_TRUE(test::contains(unigram_error(with(json::object({{"a", 1.0}}))), "model.vocab[1] is"));
  EXPECT_TRUE(test::contains(unigram_error(unigram_pieces({{"<unk>", 0.0}}), 1),
                             "model.unk_id is 1; a token id is an integer from 0 below 1"));
  EXPECT_TRUE(
      test::contains(unigram_error(unigram_pieces({{"<unk>", 0.0}}), -1), "model.unk_id is -1"));
  EXPECT_TRUE(test::contains(unigram_error(unigram_pieces({{"<unk>", 0.0}}), "0"),
                             "model.unk_id is \"0\""));
}

}  // namespace
}  // namespace unitrain::hf
