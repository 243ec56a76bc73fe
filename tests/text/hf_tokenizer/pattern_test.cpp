// Pattern: PCRE2 regular expressions with Unicode properties and look-ahead, found left to right
// without overlaps, as Hugging Face's find_matches (tokenizer/pattern.rs) walks a regex.
#include "unitrain/text/hf_tokenizer/pattern.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace unitrain::hf {
namespace {

using Matches = std::vector<std::string>;

/// The texts of the matches of `pattern` in `text`.
Matches pattern_matches(const Pattern& pattern, const std::string& text) {
  Matches out;
  pattern.for_each_match(text, [&](size_t begin, size_t end) {
    EXPECT_LT(begin, end);
    out.push_back(text.substr(begin, end - begin));
  });
  return out;
}

TEST(HfPattern, MatchesUnicodePropertiesAndLookAhead) {
  EXPECT_EQ(pattern_matches(Pattern("\\p{L}+", false, "letters"), "h\xC3\xA9llo, w\xC3\xB6rld 42"),
            (Matches{"h\xC3\xA9llo", "w\xC3\xB6rld"}));
  EXPECT_EQ(pattern_matches(Pattern("\\p{N}{1,3}", false, "numbers"), "1234567\xD9\xA3"),
            (Matches{"123", "456", "7\xD9\xA3"}));
  EXPECT_EQ(pattern_matches(Pattern("\\s+(?!\\S)", false, "spaces"), "a   b  "),
            (Matches{"  ", "  "}));
  // Case-insensitive groups, as Llama-3's (?i:'s|'t|...).
  EXPECT_EQ(pattern_matches(Pattern("(?i:'s|'t)", false, "contractions"), "IT'S it's"),
            (Matches{"'S", "'s"}));
}

TEST(HfPattern, AnEmptyMatchStepsOverOneCharacter) {
  // a* matches empty before b, é and at the end: only "aa" is reported, and nothing loops.
  EXPECT_EQ(pattern_matches(Pattern("a*", false, "a*"),
                            "baa\xC3\xA9"
                            "a"),
            (Matches{"aa", "a"}));
  EXPECT_EQ(pattern_matches(Pattern("x*", false, "x*"), "\xE6\x97\xA5\xE6\x9C\xAC"), (Matches{}));
  EXPECT_EQ(pattern_matches(Pattern("a", false, "a"), ""), (Matches{}));
}

TEST(HfPattern, ALongRunOfSpacesNeedsNoMoreThanItsThreadsStack) {
  // \s+(?!\S) over 200,000 spaces backtracks deeper than PCRE2's default 32 KiB JIT stack.
  const std::string text = "a" + std::string(200000, ' ') + "b";
  const Pattern spaces("\\s+(?!\\S)|\\s+", false, "spaces");
  const auto check = [&] {
    const Matches matches = pattern_matches(spaces, text);
    ASSERT_EQ(matches.size(), 2u);
    EXPECT_EQ(matches[0].size(), 199999u);
    EXPECT_EQ(matches[1], " ");
  };
  check();
  std::thread other(check);  // another thread, its own match context
  other.join();
}

TEST(HfPattern, RefusesAPatternThatDoesNotCompileNamingWhereItIs) {
  const std::string where = "tokenizer 't.json': pre_tokenizer.pattern.Regex";
  // PCRE2's own words after the offset vary with its version.
  EXPECT_TRUE(test::contains(test::config_error_of([&] { Pattern("(a", false, where); }),
                             where + ": the regular expression '(a' does not compile (PCRE2 at "
                                     "offset 2: "));
  EXPECT_EQ(test::config_error_of([&] { Pattern("a\xFF", false, where); }),
            where + ": the pattern is not valid UTF-8");
  // A long pattern is quoted in part.
  const std::string message =
      test::config_error_of([&] { Pattern(std::string(300, 'x') + "(", false, where); });
  EXPECT_TRUE(
      test::contains(message, "'" + std::string(200, 'x') + "...' (301 bytes) does not compile"))
      << message;
  EXPECT_LT(message.size(), 400u);
}

}  // namespace
}  // namespace unitrain::hf
