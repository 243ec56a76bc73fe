#include "unitrain/core/error_text.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace unitrain {
namespace {

TEST(ErrorText, ValidUtf8IsTextAndStrayBytesAreNot) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(is_valid_utf8("run\xff"));
  EXPECT_FALSE(is_valid_utf8("\x80"));              // a continuation byte alone
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // cut short
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(ErrorText, EscapesOnlyTheBytesThatAreNotUtf8) {
  EXPECT_EQ(escape_non_utf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(escape_non_utf8("run\xff\xfe-1"), "run\\xff\\xfe-1");
  EXPECT_EQ(escape_non_utf8("\xc3(\x80"), "\\xc3(\\x80");
}

TEST(ErrorText, MessagesShowNonUtf8BytesEscaped) {
  const std::runtime_error e("bad name 'run\xff'");
  EXPECT_EQ(error_text(e), "bad name 'run\\xff'");
  // Cut at a character's boundary: a two-byte character is kept whole or left out.
  const std::runtime_error long_text("ab\xc3\xa9");
  EXPECT_EQ(error_text(long_text, 3), "ab...");
  EXPECT_EQ(error_text(long_text, 4), "ab\xc3\xa9");
}

}  // namespace
}  // namespace unitrain
