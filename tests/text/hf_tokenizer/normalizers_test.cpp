// The normalizers of tokenizer.json, each alone through make_normalizer. Expected texts follow
// Hugging Face tokenizers (tokenizers/src/normalizers/*.rs and their tests).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {
namespace {

using nlohmann::json;

/// `text` through the normalizer that the "normalizer" section `section` describes.
std::string normalizer_output(const json& section, std::string text) {
  const std::string file = "t.json";
  make_normalizer(JsonAt(section, "normalizer", file))->normalize(text);
  return text;
}

/// The ConfigError that reading `section` as "normalizer" of t.json throws.
std::string normalizer_error(const json& section) {
  const std::string file = "t.json";
  return test::config_error_of([&] { make_normalizer(JsonAt(section, "normalizer", file)); });
}

const std::string kNormalizerEAcute = "\xC3\xA9";       // é, one code point
const std::string kNormalizerECombining = "e\xCC\x81";  // e + U+0301

TEST(HfNormalizer, UnicodeFormsComposeDecomposeAndFoldCompatibilityCharacters) {
  EXPECT_EQ(normalizer_output({{"type", "NFC"}}, "caf" + kNormalizerECombining),
            "caf" + kNormalizerEAcute);
  EXPECT_EQ(normalizer_output({{"type", "NFD"}}, "caf" + kNormalizerEAcute),
            "caf" + kNormalizerECombining);
  // ﬁ (U+FB01) and ① (U+2460) have compatibility decompositions only: NFC keeps them.
  EXPECT_EQ(normalizer_output({{"type", "NFC"}}, "\xEF\xAC\x81\xE2\x91\xA0"),
            "\xEF\xAC\x81\xE2\x91\xA0");
  EXPECT_EQ(
      normalizer_output({{"type", "NFKC"}}, "\xEF\xAC\x81\xE2\x91\xA0" + kNormalizerECombining),
      "fi1" + kNormalizerEAcute);
  EXPECT_EQ(normalizer_output({{"type", "NFKD"}}, "\xEF\xAC\x81" + kNormalizerEAcute),
            "fi" + kNormalizerECombining);
  // Å (U+212B ANGSTROM SIGN) becomes U+00C5 in every form that composes.
  EXPECT_EQ(normalizer_output({{"type", "NFC"}}, "\xE2\x84\xAB"), "\xC3\x85");
}

TEST(HfNormalizer, LowercaseMapsEachCharacterAlone) {
  // NormalizedString::lowercase maps char by char (char::to_lowercase): İ gives i + U+0307, and a
  // final Σ is σ, not the ς of a whole-string lower casing.
  EXPECT_EQ(normalizer_output({{"type", "Lowercase"}},
                              "\xC3\x89"
                              "COLE \xC4\xB0 \xCE\xA3\xCE\x91\xCE\xA3 Ab1"),
            kNormalizerEAcute + "cole i\xCC\x87 \xCF\x83\xCE\xB1\xCF\x83 ab1");
}

TEST(HfNormalizer, StripTakesUnicodeWhitespaceFromTheChosenEnds) {
  const std::string text = "\xE3\x80\x80\t a b \xC2\xA0\n";  // U+3000 and U+00A0 are White_Space
  const auto strip = [&](bool left, bool right) {
    return normalizer_output({{"type", "Strip"}, {"strip_left", left}, {"strip_right", right}},
                             text);
  };
  EXPECT_EQ(strip(true, true), "a b");
  EXPECT_EQ(strip(true, false), "a b \xC2\xA0\n");
  EXPECT_EQ(strip(false, true), "\xE3\x80\x80\t a b");
  EXPECT_EQ(strip(false, false), text);
  EXPECT_EQ(
      normalizer_output({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t\n "),
      "");
}

TEST(HfNormalizer, StripAccentsDropsCombiningMarksButDoesNotDecompose) {
  // As Hugging Face's test_strip_accents: the marks of an NFD text go; a precomposed é is one
  // character, not a mark, and stays (hence NFD before StripAccents in real files).
  EXPECT_EQ(normalizer_output({{"type", "StripAccents"}}, "Me llam" + std::string("o\xCC\x81")),
            "Me llamo");
  EXPECT_EQ(normalizer_output({{"type", "StripAccents"}}, "caf" + kNormalizerEAcute),
            "caf" + kNormalizerEAcute);
}

TEST(HfNormalizer, ReplaceRewritesEveryMatchOfAStringOrARegex) {
  const std::string meta = "\xE2\x96\x81";  // ▁
  EXPECT_EQ(normalizer_output(
                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}, "a b  c"),
            "a" + meta + "b" + meta + meta + "c");
  // Matches do not overlap, left to right (str::replace).
  EXPECT_EQ(normalizer_output(
                {{"type", "Replace"}, {"pattern", {{"String", "aa"}}}, {"content", "b"}}, "aaaaa"),
            "bba");
  // A String is literal text, not a regex.
  EXPECT_EQ(normalizer_output(
                {{"type", "Replace"}, {"pattern", {{"String", "."}}}, {"content", ""}}, "a.b.c"),
            "abc");
  EXPECT_EQ(
      normalizer_output({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
                        "a \t\n b\xE3\x80\x80"
                        "c"),
      "a b c");
}

TEST(HfNormalizer, PrependPutsItsTextBeforeANonEmptyText) {
  const json prepend = {{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}};
  EXPECT_EQ(normalizer_output(prepend, "Hello"), "\xE2\x96\x81Hello");  // Hugging Face's test
  EXPECT_EQ(normalizer_output(prepend, ""), "");
}

TEST(HfNormalizer, BertNormalizerCleansSpacesOutChineseStripsAccentsAndLowers) {
  // Control characters (\x01, U+FFFD, \0) out, \t to a space, a space either side of each CJK
  // ideograph, accents off (strip_accents null follows lowercase), lower case.
  const std::string text = std::string("H\xC3\xA9llo\tWORLD\x01\xEF\xBF\xBD", 16) +
                           std::string(1, '\0') + "\xE4\xBD\xA0\xE5\xA5\xBD!";
  EXPECT_EQ(normalizer_output({{"type", "BertNormalizer"},
                               {"clean_text", true},
                               {"handle_chinese_chars", true},
                               {"strip_accents", nullptr},
                               {"lowercase", true}},
                              text),
            "hello world \xE4\xBD\xA0  \xE5\xA5\xBD !");
  // Without lower case, strip_accents null keeps the accents too.
  EXPECT_EQ(normalizer_output({{"type", "BertNormalizer"},
                               {"clean_text", true},
                               {"handle_chinese_chars", false},
                               {"strip_accents", nullptr},
                               {"lowercase", false}},
                              text),
            "H\xC3\xA9llo WORLD\xE4\xBD\xA0\xE5\xA5\xBD!");
  EXPECT_EQ(normalizer_output({{"type", "BertNormalizer"},
                               {"clean_text", false},
                               {"handle_chinese_chars", false},
                               {"strip_accents", true},
                               {"lowercase", false}},
                              "\xC3\x89t\xC3\xA9\t\x01"),
            "Ete\t\x01");
}

TEST(HfNormalizer, SequenceAppliesItsNormalizersInOrder) {
  const json sequence = {{"type", "Sequence"},
                         {"normalizers",
                          {{{"type", "Lowercase"}},
                           {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}},
                           {{"type", "Prepend"}, {"prepend", "_"}}}}};
  EXPECT_EQ(normalizer_output(sequence, "A B"), "_a_b");
}

TEST(HfNormalizer, RefusesWhatItDoesNotReadNamingTheFileAndThePath) {
  EXPECT_TRUE(test::contains(normalizer_error({{"type", "Nmt"}}),
                             "tokenizer 't.json': normalizer has normalizer type 'Nmt', "
                             "which unitrain does not implement (it reads BertNormalizer,"));
  EXPECT_TRUE(
      test::contains(normalizer_error({{"type", "Sequence"},
                                       {"normalizers", {{{"type", "NFC"}}, {{"type", "X"}}}}}),
                     "tokenizer 't.json': normalizer.normalizers[1] has normalizer type 'X'"));
  EXPECT_EQ(normalizer_error({{"lowercase", true}}),
            "tokenizer 't.json': normalizer has no key 'type'");
  EXPECT_EQ(
      normalizer_error({{"type", "Replace"}, {"pattern", {{"Glob", "*"}}}, {"content", ""}}),
      "tokenizer 't.json': normalizer.pattern should be {\"String\": ...} or {\"Regex\": ...}");
  EXPECT_TRUE(test::contains(
      normalizer_error({{"type", "Replace"}, {"pattern", {{"Regex", "(a"}}}, {"content", ""}}),
      "tokenizer 't.json': normalizer.pattern.Regex: the regular expression '(a' does not "
      "compile"));
  EXPECT_EQ(normalizer_error({{"type", "Prepend"}}),
            "tokenizer 't.json': normalizer has no key 'prepend'");
  EXPECT_EQ(normalizer_error({{"type", "Strip"}, {"strip_left", "yes"}}),
            "tokenizer 't.json': normalizer.strip_left should be true or false, not \"yes\"");
}

}  // namespace
}  // namespace unitrain::hf
