#pragma once
// A set of byte strings in a trie, for those of them that start at a place of a text: the added
// tokens of a tokenizer.json (Gemma-3 has 6,415; a regular expression of them all is too large for
// PCRE2), the pieces of a Unigram model.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace unitrain::hf {

/// Immutable once built; a lookup walks the text's bytes down the trie, so it costs what the
/// text shares with the strings, not what the set holds. Memory: about 12 bytes a string byte.
class ByteTrie {
 public:
  /// The strings, found as their index; of equal strings, the first. Empty strings are never
  /// found.
  explicit ByteTrie(const std::vector<std::string_view>& strings);

  struct Match {
    int index = -1;     ///< the string's, or -1 when none starts there
    size_t length = 0;  ///< its bytes
  };
  /// The longest of the strings that `text` has at byte `at`.
  Match longest_at(std::string_view text, size_t at) const;
  /// Each of the strings that `text` has at byte `at`, shortest first: found(Match).
  template <class Found>
  void each_at(std::string_view text, size_t at, Found&& found) const {
    if (at >= text.size()) return;
    uint32_t node = root_child_[static_cast<unsigned char>(text[at])];
    for (size_t i = at + 1; node != 0; node = child(node, text, i++)) {
      if (nodes_[node].index >= 0) found(Match{nodes_[node].index, i - at});
    }
  }

 private:
  /// The child of `node` for text[i]; 0 when there is none or the text ends at i.
  uint32_t child(uint32_t node, std::string_view text, size_t i) const;

  struct Node {
    uint32_t first_child = 0;  ///< children are nodes first_child..first_child+child_count-1,
    uint32_t child_count = 0;  ///< their bytes (labels_) ascending
    int32_t index = -1;        ///< the string that ends here, or -1
  };
  std::vector<Node> nodes_;                 ///< nodes_[0]: the root
  std::vector<unsigned char> labels_;       ///< the byte that leads to each node
  std::array<uint32_t, 256> root_child_{};  ///< byte -> the root's child (0: none)
};

}  // namespace unitrain::hf
