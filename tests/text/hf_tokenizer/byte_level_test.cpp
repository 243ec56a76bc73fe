// GPT-2's byte-level alphabet (bytes_to_unicode in GPT-2's encoder.py, Hugging Face's
// pre_tokenizers/byte_level.rs) and its pattern.
#include "unitrain/text/hf_tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "unitrain/text/hf_tokenizer/pattern.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

TEST(HfByteLevel, PrintableBytesStandForThemselvesAndTheOthersForU0100Onwards) {
  const auto& chars = byte_to_char();
  EXPECT_EQ(chars['A'], "A");
  EXPECT_EQ(chars['!'], "!");
  EXPECT_EQ(chars['~'], "~");
  EXPECT_EQ(chars[0xA1], "\xC2\xA1");  // ¡
  EXPECT_EQ(chars[0xFF], "\xC3\xBF");  // ÿ
  // The 68 others in byte order: 0x00-0x20 are U+0100-U+0120, 0x7F-0xA0 U+0121-U+0142, 0xAD
  // U+0143. Ġ (space), Ċ (newline) and ĉ (tab) as in GPT-2's vocabulary.
  EXPECT_EQ(chars[0x00], "\xC4\x80");  // Ā
  EXPECT_EQ(chars[' '], "\xC4\xA0");   // Ġ
  EXPECT_EQ(chars['\n'], "\xC4\x8A");  // Ċ
  EXPECT_EQ(chars['\t'], "\xC4\x89");  // ĉ
  EXPECT_EQ(chars[0x7F], "\xC4\xA1");  // ġ
  EXPECT_EQ(chars[0xA0], "\xC5\x82");  // ł
  EXPECT_EQ(chars[0xAD], "\xC5\x83");  // Ń
}

TEST(HfByteLevel, EachByteIsOneCharacterThatMapsBack) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& c = byte_to_char()[b];
    size_t at = 0;
    const char32_t code_point = next_code_point(c, at);
    ASSERT_EQ(at, c.size()) << "byte " << b;
    EXPECT_EQ(char_to_byte(code_point), b);
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), 256u);
  // Characters outside the alphabet: the space itself, U+0144 after the last, U+01FF, ▁.
  EXPECT_EQ(char_to_byte(U' '), -1);
  EXPECT_EQ(char_to_byte(0x144), -1);
  EXPECT_EQ(char_to_byte(0x1FF), -1);
  EXPECT_EQ(char_to_byte(0x2581), -1);
  EXPECT_EQ(to_byte_level("a b\n\xC3\xA9"),
            "a\xC4\xA0"
            "b\xC4\x8A\xC3\x83\xC2\xA9");  // aĠbĊÃ©
  EXPECT_EQ(to_byte_level(""), "");
}

TEST(HfByteLevel, Gpt2PatternSplitsContractionsWordsNumbersAndSpaces) {
  const Pattern gpt2(kGpt2Pattern, false, "GPT-2's pattern");
  const auto pieces = [&](const std::string& text) {
    std::vector<std::string> out;
    gpt2.for_each_match(text, [&](size_t b, size_t e) { out.push_back(text.substr(b, e - b)); });
    return out;
  };
  EXPECT_EQ(pieces("I'll go, it's 2024!"),
            (std::vector<std::string>{"I", "'ll", " go", ",", " it", "'s", " 2024", "!"}));
  // A run of spaces keeps its last space for the word after it; newlines stand apart.
  EXPECT_EQ(pieces("a   b\n\nc"), (std::vector<std::string>{"a", "  ", " b", "\n", "\n", "c"}));
  EXPECT_EQ(pieces(" caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD"),
            (std::vector<std::string>{" caf\xC3\xA9", " \xE4\xBD\xA0\xE5\xA5\xBD"}));
}

}  // namespace
}  // namespace unitrain::hf
