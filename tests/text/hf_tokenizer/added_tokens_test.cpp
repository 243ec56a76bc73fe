// AddedTokenFinder: the added tokens found in a text before it is split, as Hugging Face's
// AddedVocabulary::find_matches does (tokenizer/added_vocabulary.rs): leftmost-longest, then
// single_word, lstrip and rstrip.
#include "unitrain/text/hf_tokenizer/added_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace unitrain::hf {
namespace {

using Segments = std::vector<std::string>;

AddedToken added_token(int id, std::string content) {
  AddedToken t;
  t.id = id;
  t.content = std::move(content);
  return t;
}

/// The segments of `text`: a token as "#id", a text between tokens as itself.
Segments added_token_segments(const std::vector<AddedToken>& tokens, std::string_view text) {
  std::vector<const AddedToken*> pointers;
  for (const AddedToken& t : tokens) pointers.push_back(&t);
  const AddedTokenFinder finder(pointers);
  Segments out;
  for (const Segment& s : finder.split(text)) {
    out.push_back(s.id >= 0 ? "#" + std::to_string(s.id) : std::string(s.text));
  }
  return out;
}

TEST(HfAddedTokens, FindsTheLeftmostTokenAndOfThoseThereTheLongest) {
  const std::vector<AddedToken> tokens = {added_token(9, "<x>"), added_token(10, "<xy>"),
                                          added_token(11, "ab"), added_token(12, "bcd")};
  EXPECT_EQ(added_token_segments(tokens, "z<xy><x>z"), (Segments{"z", "#10", "#9", "z"}));
  // "ab" starts before "bcd", longer as it is.
  EXPECT_EQ(added_token_segments(tokens, "abcd"), (Segments{"#11", "cd"}));
  EXPECT_EQ(added_token_segments(tokens, "<x><x>"), (Segments{"#9", "#9"}));
  EXPECT_EQ(added_token_segments(tokens, "<x"), (Segments{"<x"}));
  // Nothing found, or no tokens at all: the text as one segment, even an empty one.
  EXPECT_EQ(added_token_segments(tokens, ""), (Segments{""}));
  EXPECT_EQ(added_token_segments({}, "ab"), (Segments{"ab"}));
  EXPECT_TRUE(AddedTokenFinder({}).empty());
}

TEST(HfAddedTokens, OfTokensWithEqualContentTheFirstIsFound) {
  // AddedTokenFinder's contract (added_tokens.h).
  EXPECT_EQ(added_token_segments({added_token(5, "<s>"), added_token(6, "<s>")}, "a<s>"),
            (Segments{"a", "#5"}));
}

TEST(HfAddedTokens, LstripAndRstripTakeTheWhitespaceBesideTheToken) {
  AddedToken both = added_token(11, "[L]");
  both.lstrip = both.rstrip = true;
  AddedToken left = added_token(12, "[M]");
  left.lstrip = true;
  AddedToken right = added_token(13, "[R]");
  right.rstrip = true;
  const std::vector<AddedToken> tokens = {both, left, right};
  EXPECT_EQ(added_token_segments(tokens, "ab \t[L]\xE3\x80\x80 cd"), (Segments{"ab", "#11", "cd"}));
  EXPECT_EQ(added_token_segments(tokens, "a  [M]  b"), (Segments{"a", "#12", "  b"}));
  EXPECT_EQ(added_token_segments(tokens, "a  [R]  b"), (Segments{"a  ", "#13", "b"}));
  // The spaces a token's rstrip took are not taken again by the next one's lstrip.
  EXPECT_EQ(added_token_segments(tokens, "[R]  [M]x"), (Segments{"#13", "#12", "x"}));
  EXPECT_EQ(added_token_segments(tokens, "  [L]  "), (Segments{"#11"}));
}

TEST(HfAddedTokens, SingleWordTokensAreFoundOnlyWhereNoWordCharacterTouchesThem) {
  AddedToken word = added_token(12, "w");
  word.single_word = true;
  const std::vector<AddedToken> tokens = {word};
  EXPECT_EQ(added_token_segments(tokens, "a w b"), (Segments{"a ", "#12", " b"}));
  EXPECT_EQ(added_token_segments(tokens, "w.w"), (Segments{"#12", ".", "#12"}));
  // A letter (é), a digit or _ beside it is a word character.
  EXPECT_EQ(added_token_segments(tokens, "aw \xC3\xA9w w1 _w"), (Segments{"aw \xC3\xA9w w1 _w"}));
  // Each w of "ww" touches the other.
  EXPECT_EQ(added_token_segments(tokens, "ww w"), (Segments{"ww ", "#12"}));
}

}  // namespace
}  // namespace unitrain::hf
