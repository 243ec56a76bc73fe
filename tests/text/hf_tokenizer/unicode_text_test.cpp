// UTF-8 and the Unicode facts the stages read: Rust's char predicates (is_whitespace,
// is_alphabetic's categories, to_lowercase) and String::from_utf8_lossy, which Hugging Face uses.
#include "unitrain/text/hf_tokenizer/unicode_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace unitrain::hf {
namespace {

const std::string kUnicodeReplacement = "\xEF\xBF\xBD";  // U+FFFD

TEST(HfUnicodeText, CodePointsOfOneToFourBytesReadAndWriteBack) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  std::vector<char32_t> points;
  for (size_t i = 0; i < text.size();) points.push_back(next_code_point(text, i));
  EXPECT_EQ(points, (std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600}));
  std::string back;
  for (char32_t c : points) append_utf8(back, c);
  EXPECT_EQ(back, text);
  EXPECT_EQ(utf8_length(0xF0), 4u);
  EXPECT_EQ(utf8_length(0xE2), 3u);
  EXPECT_EQ(utf8_length(0xC3), 2u);
}

TEST(HfUnicodeText, InvalidUtf8BecomesOneReplacementPerMaximalBadPrefix) {
  EXPECT_TRUE(is_valid_utf8("a\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("a\xFF"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // cut short
  EXPECT_EQ(valid_utf8("a\xC3\xA9"), "a\xC3\xA9");
  // As String::from_utf8_lossy's documented examples: a stray byte, and a sequence cut short
  // ("Hello \xF0\x90\x80World") are one U+FFFD each.
  EXPECT_EQ(valid_utf8("a\xFF"
                       "b"),
            "a" + kUnicodeReplacement + "b");
  EXPECT_EQ(valid_utf8("Hello \xF0\x90\x80World"), "Hello " + kUnicodeReplacement + "World");
  EXPECT_EQ(valid_utf8("\xE2\x82"), kUnicodeReplacement);
  EXPECT_EQ(valid_utf8("\xC3("), kUnicodeReplacement + "(");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kUnicodeReplacement + kUnicodeReplacement);
}

TEST(HfUnicodeText, NormalFormsAsUnicodeDefinesThem) {
  EXPECT_EQ(normalize_form("e\xCC\x81", NormalForm::Nfc), "\xC3\xA9");
  EXPECT_EQ(normalize_form("\xC3\xA9", NormalForm::Nfd), "e\xCC\x81");
  EXPECT_EQ(normalize_form("\xEF\xAC\x81", NormalForm::Nfkc), "fi");
  EXPECT_EQ(normalize_form("\xEF\xAC\x81\xC3\xA9", NormalForm::Nfkd), "fie\xCC\x81");
  EXPECT_EQ(normalize_form("plain", NormalForm::Nfkd), "plain");
}

TEST(HfUnicodeText, CharacterClassesFollowRustsCharPredicates) {
  // White_Space (char::is_whitespace): not U+001C (Python's isspace says yes) nor U+200B.
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', char32_t{0x0B}, char32_t{0x85}, char32_t{0xA0},
                     char32_t{0x1680}, char32_t{0x2028}, char32_t{0x3000}}) {
    EXPECT_TRUE(is_whitespace(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'a', char32_t{0x1C}, char32_t{0x200B}, char32_t{0x2581}}) {
    EXPECT_FALSE(is_whitespace(c)) << std::hex << static_cast<uint32_t>(c);
  }
  EXPECT_TRUE(is_letter(0xE9));
  EXPECT_TRUE(is_letter(0x4F60));  // 你
  EXPECT_FALSE(is_letter(U'1'));
  EXPECT_TRUE(is_number(0x663));  // Arabic-Indic three (Nd)
  EXPECT_TRUE(is_number(0xB2));   // ² (No)
  EXPECT_FALSE(is_number(U'a'));
  EXPECT_TRUE(is_punctuation(0xBF));  // ¿
  EXPECT_TRUE(is_punctuation(U'-'));
  EXPECT_FALSE(is_punctuation(U'$'));  // Sc: a symbol
  EXPECT_TRUE(is_nonspacing_mark(0x301));
  EXPECT_FALSE(is_nonspacing_mark(U'e'));
  EXPECT_TRUE(is_other(0x01));    // Cc
  EXPECT_TRUE(is_other(0x200B));  // Cf
  EXPECT_TRUE(is_other(0x378));   // Cn, unassigned
  EXPECT_TRUE(is_other(0xE000));  // Co
  EXPECT_FALSE(is_other(U'a'));
}

TEST(HfUnicodeText, LowercaseIsRustsToLowercaseOfEachCharacter) {
  // İ (U+0130) is the one character whose lower case is two (i + U+0307).
  EXPECT_EQ(lowercase("ABC \xC3\x80\xC3\x89 \xC4\xB0 \xCE\xA3 \xD0\x96 1!"),
            "abc \xC3\xA0\xC3\xA9 i\xCC\x87 \xCF\x83 \xD0\xB6 1!");
  std::string out;
  append_lowercase(out, 0x130);
  EXPECT_EQ(out, "i\xCC\x87");
}

}  // namespace
}  // namespace unitrain::hf
