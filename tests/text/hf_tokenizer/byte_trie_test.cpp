// ByteTrie: the longest string at a place, against a plain search over every string.
#include "unitrain/text/hf_tokenizer/byte_trie.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace unitrain::hf {
namespace {

/// The longest of `strings` at `at` of `text`, the first of equal ones, by trying each.
ByteTrie::Match longest_by_trying_each(const std::vector<std::string>& strings,
                                       const std::string& text, size_t at) {
  ByteTrie::Match best;
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string& s = strings[i];
    if (!s.empty() && s.size() > best.length && text.compare(at, s.size(), s) == 0) {
      best = {static_cast<int>(i), s.size()};
    }
  }
  return best;
}

TEST(ByteTrie, FindsTheLongestStringAtEachPlaceAsTryingEachDoes) {
  std::mt19937 rng(7);
  // Few letters, so that strings share prefixes and are prefixes of one another; bytes above
  // 0x7F, so that their order is the unsigned one.
  const std::string letters = "ab\xC3\xA9\n";
  const auto draw = [&](size_t max_length) {
    std::string s(1 + rng() % max_length, ' ');
    for (char& c : s) c = letters[rng() % letters.size()];
    return s;
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> strings;
    for (int i = 0; i < 30; ++i) strings.push_back(draw(5));
    strings.push_back(strings[3]);  // a duplicate: the first is found
    strings.push_back("");          // never found
    const std::vector<std::string_view> views(strings.begin(), strings.end());
    const ByteTrie trie(views);
    const std::string text = draw(200);
    for (size_t at = 0; at <= text.size(); ++at) {
      const ByteTrie::Match got = trie.longest_at(text, at);
      const ByteTrie::Match want = longest_by_trying_each(strings, text, at);
      ASSERT_EQ(got.index, want.index) << "round " << round << " at " << at;
      ASSERT_EQ(got.length, want.length) << "round " << round << " at " << at;
    }
  }
  EXPECT_EQ(ByteTrie(std::vector<std::string_view>{}).longest_at("abc", 0).index, -1);
}

}  // namespace
}  // namespace unitrain::hf
