#pragma once
// A set of byte strings in a trie, for the longest of them that starts at a place of a text: the
// added tokens of a tokenizer.json (Gemma-3 has 6,415; a regular expression of them all is too
// large for PCRE2).
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

 private:
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
