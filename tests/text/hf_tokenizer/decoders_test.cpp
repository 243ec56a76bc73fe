// The decoders of tokenizer.json, each alone through make_decoder. Expected pieces follow
// Hugging Face tokenizers (tokenizers/src/decoders/*.rs and their tests; decode_chain).
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
using Tokens = std::vector<std::string>;

/// `tokens` through the decoder that the "decoder" section `section` describes.
Tokens decoder_output(const json& section, Tokens tokens) {
  const std::string file = "t.json";
  make_decoder(JsonAt(section, "decoder", file))->decode(tokens);
  return tokens;
}

std::string decoder_error(const json& section) {
  const std::string file = "t.json";
  return test::config_error_of([&] { make_decoder(JsonAt(section, "decoder", file)); });
}

const std::string kDecoderMeta = "\xE2\x96\x81";         // ▁
const std::string kDecoderReplacement = "\xEF\xBF\xBD";  // U+FFFD

TEST(HfDecoder, ByteLevelTurnsTheAlphabetBackIntoBytesAsOneText) {
  const json byte_level = {{"type", "ByteLevel"}};
  EXPECT_EQ(decoder_output(byte_level, {"Hello", "\xC4\xA0world", "\xC4\x8A"}),
            (Tokens{"Hello world\n"}));
  EXPECT_EQ(decoder_output(byte_level, {"caf", "\xC3\x83", "\xC2\xA9"}), (Tokens{"caf\xC3\xA9"}));
  // A token with a character outside the alphabet (a space, ▁) gives its own bytes.
  EXPECT_EQ(decoder_output(byte_level, {"a", "<| x |>", kDecoderMeta + "b"}),
            (Tokens{"a<| x |>" + kDecoderMeta + "b"}));
  // Bytes that are not UTF-8 become U+FFFD (String::from_utf8_lossy): a lone C3, a lone A9.
  EXPECT_EQ(decoder_output(byte_level, {"a\xC3\x83", "\xC2\xA9\xC2\xA9"}),
            (Tokens{"a\xC3\xA9" + kDecoderReplacement}));
}

TEST(HfDecoder, WordPieceJoinsHashHashPiecesAndSpacesTheOthers) {
  // wordpiece.rs's test: the first token keeps its prefix.
  EXPECT_EQ(decoder_output({{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", false}},
                           {"##uelo", "Ara", "##\xC3\xBAj", "##o", "No", "##guera"}),
            (Tokens{"##uelo", " Ara", "\xC3\xBAj", "o", " No", "guera"}));
  // cleanup: no space before punctuation and contractions.
  EXPECT_EQ(decoder_output({{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}},
                           {"it", "'s", "un", "##able", ",", "isn", "n't", "it", "?"}),
            (Tokens{"it", "'s", " un", "able", ",", " isn", "n't", " it", "?"}));
  EXPECT_EQ(decoder_output({{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", false}},
                           {"it", "'s", "."}),
            (Tokens{"it", " 's", " ."}));
}

TEST(HfDecoder, MetaspaceTurnsTheReplacementIntoSpacesAndDropsTheFirstTokensLeadingOne) {
  const std::string m = kDecoderMeta;
  // metaspace.rs's decode test.
  EXPECT_EQ(
      decoder_output({{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}},
                     {m + "Hey", m + "friend!"}),
      (Tokens{"Hey", " friend!"}));
  EXPECT_EQ(decoder_output({{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "first"}},
                           {m + "Hey", m + "friend!"}),
            (Tokens{"Hey", " friend!"}));
  EXPECT_EQ(decoder_output({{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "never"}},
                           {m + "Hey", m + "friend!"}),
            (Tokens{" Hey", " friend!"}));
  // The older add_prefix_space: false is "never".
  EXPECT_EQ(
      decoder_output({{"type", "Metaspace"}, {"replacement", "_"}, {"add_prefix_space", false}},
                     {"_a", "_b"}),
      (Tokens{" a", " b"}));
}

TEST(HfDecoder, ReplaceRewritesEachToken) {
  EXPECT_EQ(decoder_output(
                {{"type", "Replace"}, {"pattern", {{"String", kDecoderMeta}}}, {"content", " "}},
                {kDecoderMeta + "a" + kDecoderMeta + "b", "c"}),
            (Tokens{" a b", "c"}));
  EXPECT_EQ(decoder_output({{"type", "Replace"}, {"pattern", {{"Regex", "\\d"}}}, {"content", "#"}},
                           {"a1", "22"}),
            (Tokens{"a#", "##"}));
}

TEST(HfDecoder, ByteFallbackTurnsRunsOfByteTokensIntoTheirText) {
  // byte_fallback.rs's tests: a run that is not UTF-8 is one U+FFFD a byte; hex in either case.
  const json fallback = {{"type", "ByteFallback"}};
  EXPECT_EQ(decoder_output(fallback, {"Hey", "friend!"}), (Tokens{"Hey", "friend!"}));
  EXPECT_EQ(decoder_output(fallback, {"<0x61>"}), (Tokens{"a"}));
  EXPECT_EQ(decoder_output(fallback, {"<0xE5>"}), (Tokens{kDecoderReplacement}));
  EXPECT_EQ(decoder_output(fallback, {"<0xE5>", "<0x8f>", "<0xab>", "a"}),
            (Tokens{"\xE5\x8F\xAB", "a"}));  // 叫
  EXPECT_EQ(decoder_output(fallback, {"<0xE5>", "<0x8f>", "a"}),
            (Tokens{kDecoderReplacement, kDecoderReplacement, "a"}));
  EXPECT_EQ(decoder_output(fallback, {"<0x61>", "<0xZZ>", "<0x62>"}), (Tokens{"a", "<0xZZ>", "b"}));
}

TEST(HfDecoder, FuseStripAndBpeDecoder) {
  EXPECT_EQ(decoder_output({{"type", "Fuse"}}, {"a", " b", "c"}), (Tokens{"a bc"}));
  // strip.rs's test: Strip('H', 1, 0).
  EXPECT_EQ(decoder_output({{"type", "Strip"}, {"content", "H"}, {"start", 1}, {"stop", 0}},
                           {"Hey", " friend!", "HHH"}),
            (Tokens{"ey", " friend!", "HH"}));
  EXPECT_EQ(decoder_output({{"type", "Strip"}, {"content", " "}, {"start", 0}, {"stop", 2}},
                           {"a   ", " b", "c"}),
            (Tokens{"a ", " b", "c"}));
  // BPEDecoder: the suffix is a space, except in the last token.
  EXPECT_EQ(
      decoder_output({{"type", "BPEDecoder"}, {"suffix", "</w>"}}, {"hello</w>", "wor", "ld</w>"}),
      (Tokens{"hello ", "wor", "ld"}));
}

TEST(HfDecoder, SequenceChainsItsDecodersAsLlamaTwosDoes) {
  const json sequence = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "Replace"}, {"pattern", {{"String", kDecoderMeta}}}, {"content", " "}},
        {{"type", "ByteFallback"}},
        {{"type", "Fuse"}},
        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  EXPECT_EQ(decoder_output(sequence, {kDecoderMeta + "Hey", kDecoderMeta, "<0xC3>", "<0xA9>"}),
            (Tokens{"Hey \xC3\xA9"}));
}

TEST(HfDecoder, RefusesWhatItDoesNotReadNamingTheFileAndThePath) {
  EXPECT_TRUE(test::contains(
      decoder_error({{"type", "Sequence"}, {"decoders", {{{"type", "Fuse"}}, {{"type", "CTC"}}}}}),
      "tokenizer 't.json': decoder.decoders[1] has decoder type 'CTC', which unitrain does not "
      "implement"));
  EXPECT_EQ(decoder_error({{"type", "Replace"}, {"pattern", {{"String", "a"}}}}),
            "tokenizer 't.json': decoder has no key 'content'");
  EXPECT_EQ(decoder_error({{"type", "Strip"}, {"content", " "}, {"start", "1"}}),
            "tokenizer 't.json': decoder.start should be an integer, not \"1\"");
}

}  // namespace
}  // namespace unitrain::hf
