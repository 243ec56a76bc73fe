// TextPattern: a tokenizer.json pattern, {"String": ...} found as it is or {"Regex": ...}, as
// Replace and Split read them (Hugging Face's SplitPattern, ReplacePattern).
#include "unitrain/text/hf_tokenizer/text_pattern.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {
namespace {

using nlohmann::json;

TextPattern text_pattern_of(const json& section) {
  const std::string file = "t.json";
  return TextPattern(JsonAt(section, "normalizer.pattern", file));
}

std::vector<std::pair<size_t, size_t>> text_pattern_spans(const json& section,
                                                          const std::string& text) {
  std::vector<std::pair<size_t, size_t>> out;
  text_pattern_of(section).for_each_match(text,
                                          [&](size_t b, size_t e) { out.emplace_back(b, e); });
  return out;
}

TEST(HfTextPattern, AStringIsFoundAsItIsWithoutOverlaps) {
  using Spans = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(text_pattern_spans({{"String", "aa"}}, "aaaaa"), (Spans{{0, 2}, {2, 4}}));
  EXPECT_EQ(text_pattern_spans({{"String", ".*"}}, "a.*b.*"), (Spans{{1, 3}, {4, 6}}));
  EXPECT_EQ(text_pattern_of({{"String", "aa"}}).replace_all("aaaaa", "b"), "bba");
  EXPECT_EQ(text_pattern_of({{"String", "x"}}).replace_all("abc", "y"), "abc");
}

TEST(HfTextPattern, ARegexIsFoundWithUnicodeClasses) {
  using Spans = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(text_pattern_spans({{"Regex", "\\d+"}}, "a1b22"), (Spans{{1, 2}, {3, 5}}));
  EXPECT_EQ(text_pattern_of({{"Regex", "\\d+"}}).replace_all("a1b22c", "#"), "a#b#c");
  EXPECT_EQ(text_pattern_of({{"Regex", "\\p{L}"}}).replace_all("\xC3\xA9t\xC3\xA9 1", "."),
            "... 1");
}

TEST(HfTextPattern, RefusesAnythingElseNamingThePath) {
  const auto error = [](const json& section) {
    return test::config_error_of([&] { text_pattern_of(section); });
  };
  EXPECT_EQ(error({{"String", ""}}),
            "tokenizer 't.json': normalizer.pattern is an empty String pattern");
  EXPECT_EQ(
      error({{"Glob", "*"}}),
      "tokenizer 't.json': normalizer.pattern should be {\"String\": ...} or {\"Regex\": ...}");
  EXPECT_EQ(error({{"Regex", 5}}),
            "tokenizer 't.json': normalizer.pattern.Regex should be a string, not 5");
  EXPECT_EQ(error("-"), "tokenizer 't.json': normalizer.pattern should be an object, not \"-\"");
  EXPECT_TRUE(test::contains(error({{"Regex", "[a"}}),
                             "tokenizer 't.json': normalizer.pattern.Regex: the regular expression "
                             "'[a' does not compile"));
}

}  // namespace
}  // namespace unitrain::hf
