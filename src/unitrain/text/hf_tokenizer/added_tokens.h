#pragma once
// The added tokens of a tokenizer.json ("added_tokens"): found in the text before it is split,
// each becoming its own id.
#include <string>
#include <string_view>
#include <vector>

#include "unitrain/text/hf_tokenizer/byte_trie.h"

namespace unitrain::hf {

/// One entry of "added_tokens".
struct AddedToken {
  int id = -1;
  std::string content;
  bool special = false;
  bool normalized = false;   ///< found in the normalized text rather than the raw text
  bool lstrip = false;       ///< takes the whitespace on its left
  bool rstrip = false;       ///< takes the whitespace on its right
  bool single_word = false;  ///< only where no word character touches it
};

/// A stretch of text between added tokens, or one added token (`id` >= 0).
struct Segment {
  std::string_view text;
  int id = -1;
};

/// Finds a set of added tokens in a text: the leftmost first, the longest of those that start
/// there (Hugging Face's leftmost-longest matching), in a byte trie, so that 100,000 tokens cost
/// what 10 do. Of tokens with equal content, the first in `tokens`.
class AddedTokenFinder {
 public:
  /// `tokens` must outlive the finder.
  explicit AddedTokenFinder(const std::vector<const AddedToken*>& tokens);
  bool empty() const { return tokens_.empty(); }
  /// `text` as segments in order; texts between tokens may be empty only when nothing matched.
  std::vector<Segment> split(std::string_view text) const;

 private:
  std::vector<const AddedToken*> tokens_;
  ByteTrie trie_;
};

}  // namespace unitrain::hf
