// The pre-tokenizers of tokenizer.json, each alone through make_pre_tokenizer. Expected pieces
// follow Hugging Face tokenizers (tokenizers/src/pre_tokenizers/*.rs and their tests).
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
using Texts = std::vector<std::string>;

/// The pieces the "pre_tokenizer" section `section` splits `text` into, byte-level mapped when
/// the pre-tokenizer left that pending. `first`: the text starts the input.
Texts pre_tokenizer_pieces(const json& section, const std::string& text, bool first = true) {
  const std::string file = "t.json";
  Pieces pieces;
  pieces.texts = {text};
  make_pre_tokenizer(JsonAt(section, "pre_tokenizer", file))->split(pieces, first);
  pieces.settle();
  return pieces.texts;
}

std::string pre_tokenizer_error(const json& section) {
  const std::string file = "t.json";
  return test::config_error_of([&] { make_pre_tokenizer(JsonAt(section, "pre_tokenizer", file)); });
}

const std::string kPreTokenizerMeta = "\xE2\x96\x81";  // ▁
const std::string kPreTokenizerSpace = "\xC4\xA0";     // Ġ, a space in GPT-2's alphabet
const std::string kPreTokenizerNewline = "\xC4\x8A";   // Ċ, a newline

TEST(HfPreTokenizer, WhitespaceKeepsWordsAndPunctuationRunsApart) {
  // Hugging Face's whitespace.rs tests: \w+|[^\w\s]+ kept, whitespace dropped.
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Whitespace"}}, "Hey man!"), (Texts{"Hey", "man", "!"}));
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Whitespace"}}, "How are you doing?"),
            (Texts{"How", "are", "you", "doing", "?"}));
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Whitespace"}}, "a_1+b, \t!?c"),
            (Texts{"a_1", "+", "b", ",", "!?", "c"}));
  // WhitespaceSplit splits on Unicode whitespace only (U+3000 here).
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "WhitespaceSplit"}}, " Hey  man!\xE3\x80\x80x\n"),
            (Texts{"Hey", "man!", "x"}));
}

TEST(HfPreTokenizer, BertPreTokenizerSplitsOnSpacesAndIsolatesEachPunctuationMark) {
  // Hugging Face's bert.rs test; ASCII symbols such as $ and + count as punctuation, and so does
  // Unicode's (¿).
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "BertPreTokenizer"}}, "Hey friend!     How are you?!?"),
            (Texts{"Hey", "friend", "!", "How", "are", "you", "?", "!", "?"}));
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "BertPreTokenizer"}},
                                 "\xC2\xBF"
                                 "a$5+b"),
            (Texts{"\xC2\xBF", "a", "$", "5", "+", "b"}));
}

TEST(HfPreTokenizer, ByteLevelSplitsWithGpt2sPatternAndMapsBytesToItsAlphabet) {
  const json no_prefix = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  // GPT-2's pattern: contractions apart, a space starts the next word, and of a run of spaces
  // the last goes with the word after it.
  const std::string g = kPreTokenizerSpace;
  EXPECT_EQ(pre_tokenizer_pieces(no_prefix, "Hello world's  x\n"),
            (Texts{"Hello", g + "world", "'s", g, g + "x", kPreTokenizerNewline}));
  EXPECT_EQ(pre_tokenizer_pieces(no_prefix, "abc123 \xC3\xA9!"),
            (Texts{"abc", "123", g + "\xC3\x83\xC2\xA9", "!"}));  // é's bytes are Ã ©
  // add_prefix_space puts a space before a text that has none.
  const json prefix = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(pre_tokenizer_pieces(prefix, "Hello"), (Texts{g + "Hello"}));
  EXPECT_EQ(pre_tokenizer_pieces(prefix, " Hello"), (Texts{g + "Hello"}));
  // use_regex false: the text whole.
  EXPECT_EQ(
      pre_tokenizer_pieces(
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}, "a b\n"),
      (Texts{"a" + g + "b" + kPreTokenizerNewline}));
}

TEST(HfPreTokenizer, ByteLevelLeavesTheMappingPendingUntilSomethingNeedsTheText) {
  const std::string file = "t.json";
  const json section = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  Pieces pieces;
  pieces.texts = {"a b"};
  make_pre_tokenizer(JsonAt(section, "pre_tokenizer", file))->split(pieces, true);
  EXPECT_TRUE(pieces.byte_level);
  EXPECT_EQ(pieces.texts, (Texts{"a", " b"}));
  pieces.settle();
  EXPECT_FALSE(pieces.byte_level);
  EXPECT_EQ(pieces.texts, (Texts{"a", kPreTokenizerSpace + "b"}));
  // A pre-tokenizer after ByteLevel sees the mapped text (Ġ), as in Hugging Face's Sequence.
  const json sequence = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}},
        {{"type", "Split"},
         {"pattern", {{"String", kPreTokenizerSpace}}},
         {"behavior", "Removed"}}}}};
  EXPECT_EQ(pre_tokenizer_pieces(sequence, "a b c"), (Texts{"a", "b", "c"}));
}

TEST(HfPreTokenizer, SplitBehavesAsEachSplitDelimiterBehaviorSays) {
  // The example of SplitDelimiterBehavior's documentation (tokenizer/normalizer.rs).
  const auto split = [](const char* behavior) {
    return pre_tokenizer_pieces({{"type", "Split"},
                                 {"pattern", {{"String", "-"}}},
                                 {"behavior", behavior},
                                 {"invert", false}},
                                "the-final--countdown");
  };
  EXPECT_EQ(split("Removed"), (Texts{"the", "final", "countdown"}));
  EXPECT_EQ(split("Isolated"), (Texts{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithPrevious"), (Texts{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithNext"), (Texts{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split("Contiguous"), (Texts{"the", "-", "final", "--", "countdown"}));
  // A Regex, as Llama-3's numbers: at most three digits a piece.
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Split"},
                                  {"pattern", {{"Regex", "\\p{N}{1,3}"}}},
                                  {"behavior", "Isolated"},
                                  {"invert", false}},
                                 "12345ab"),
            (Texts{"123", "45", "ab"}));
}

TEST(HfPreTokenizer, SplitInvertedKeepsTheMatchesAndTreatsTheRestAsDelimiters) {
  // split.rs's test: splitting on " " equals splitting inverted on "Hello".
  const auto split = [](const json& pattern, bool invert) {
    return pre_tokenizer_pieces(
        {{"type", "Split"}, {"pattern", pattern}, {"behavior", "Removed"}, {"invert", invert}},
        "Hello Hello Hello");
  };
  EXPECT_EQ(split({{"String", " "}}, false), (Texts{"Hello", "Hello", "Hello"}));
  EXPECT_EQ(split({{"String", "Hello"}}, true), (Texts{"Hello", "Hello", "Hello"}));
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Split"},
                                  {"pattern", {{"Regex", "\\d+"}}},
                                  {"behavior", "Removed"},
                                  {"invert", true}},
                                 "a12b3"),
            (Texts{"12", "3"}));
}

TEST(HfPreTokenizer, DigitsKeepsRunsOfNumbersOrEachDigitApart) {
  // char::is_numeric: Arabic-Indic digits (U+0663, U+0664) too.
  const std::string text = "abc123d45\xD9\xA3\xD9\xA4";
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Digits"}, {"individual_digits", false}}, text),
            (Texts{"abc", "123", "d", "45\xD9\xA3\xD9\xA4"}));
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Digits"}, {"individual_digits", true}}, text),
            (Texts{"abc", "1", "2", "3", "d", "4", "5", "\xD9\xA3", "\xD9\xA4"}));
}

TEST(HfPreTokenizer, PunctuationIsolatesEachMarkByDefault) {
  // punctuation.rs's punctuation_basic.
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Punctuation"}}, "Hey friend!     How are you?!?"),
            (Texts{"Hey friend", "!", "     How are you", "?", "!", "?"}));
  EXPECT_EQ(pre_tokenizer_pieces({{"type", "Punctuation"}, {"behavior", "Contiguous"}}, "you?!?"),
            (Texts{"you", "?!?"}));
}

TEST(HfPreTokenizer, MetaspaceReplacesSpacesAndStartsEachWordWithTheReplacement) {
  const std::string m = kPreTokenizerMeta;
  const auto metaspace = [](const char* scheme, bool split) {
    return json{{"type", "Metaspace"},
                {"replacement", kPreTokenizerMeta},
                {"prepend_scheme", scheme},
                {"split", split}};
  };
  // metaspace.rs's basic and multiple_spaces.
  EXPECT_EQ(pre_tokenizer_pieces(metaspace("always", true), "Hey friend!"),
            (Texts{m + "Hey", m + "friend!"}));
  EXPECT_EQ(pre_tokenizer_pieces(metaspace("always", true), "Hey   friend!"),
            (Texts{m + "Hey", m, m, m + "friend!"}));
  EXPECT_EQ(pre_tokenizer_pieces(metaspace("always", true), "Hey", /*first=*/false),
            (Texts{m + "Hey"}));
  // "first": only at the start of the input; "never": not at all.
  EXPECT_EQ(pre_tokenizer_pieces(metaspace("first", true), "Hey you", true),
            (Texts{m + "Hey", m + "you"}));
  EXPECT_EQ(pre_tokenizer_pieces(metaspace("first", true), "Hey you", false),
            (Texts{"Hey", m + "you"}));
  EXPECT_EQ(pre_tokenizer_pieces(metaspace("never", true), "Hey you"), (Texts{"Hey", m + "you"}));
  // metaspace.rs's prepend scheme "first" test: behind a Split, only the first piece gets it.
  const json sequence = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "(<s>)"}}}, {"behavior", "Isolated"}},
        metaspace("first", false)}}};
  EXPECT_EQ(pre_tokenizer_pieces(sequence, "Hey my friend <s>how" + m + "are you"),
            (Texts{m + "Hey" + m + "my" + m + "friend" + m, "<s>", "how" + m + "are" + m + "you"}));
  // The older add_prefix_space: false is "never".
  EXPECT_EQ(pre_tokenizer_pieces(
                {{"type", "Metaspace"}, {"replacement", "_"}, {"add_prefix_space", false}}, "a b"),
            (Texts{"a", "_b"}));
}

TEST(HfPreTokenizer, SequenceSplitsThePiecesOfThePartBefore) {
  EXPECT_EQ(
      pre_tokenizer_pieces(
          {{"type", "Sequence"},
           {"pretokenizers",
            {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}},
          "ab12 c3"),
      (Texts{"ab", "1", "2", "c", "3"}));
}

TEST(HfPreTokenizer, RefusesWhatItDoesNotReadNamingTheFileAndThePath) {
  EXPECT_TRUE(test::contains(
      pre_tokenizer_error(
          {{"type", "Sequence"},
           {"pretokenizers", {{{"type", "Whitespace"}}, {{"type", "UnicodeScripts"}}}}}),
      "tokenizer 't.json': pre_tokenizer.pretokenizers[1] has pre_tokenizer type 'UnicodeScripts', "
      "which unitrain does not implement"));
  EXPECT_EQ(pre_tokenizer_error(
                {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Apart"}}),
            "tokenizer 't.json': pre_tokenizer.behavior is 'Apart'; a split behavior is Removed, "
            "Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
  EXPECT_EQ(pre_tokenizer_error(
                {{"type", "Split"}, {"pattern", {{"String", ""}}}, {"behavior", "Removed"}}),
            "tokenizer 't.json': pre_tokenizer.pattern is an empty String pattern");
  EXPECT_EQ(pre_tokenizer_error({{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}}),
            "tokenizer 't.json': pre_tokenizer.prepend_scheme is 'sometimes'; prepend_scheme is "
            "always, first or never");
  EXPECT_EQ(pre_tokenizer_error({{"type", "Metaspace"}, {"replacement", ""}}),
            "tokenizer 't.json': pre_tokenizer.replacement is empty");
}

}  // namespace
}  // namespace unitrain::hf
