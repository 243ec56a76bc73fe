#include "unitrain/text/hf_tokenizer/byte_trie.h"

#include <algorithm>
#include <deque>
#include <numeric>

namespace unitrain::hf {

ByteTrie::ByteTrie(const std::vector<std::string_view>& strings) {
  // Sorted (bytes as unsigned, a prefix first; equal strings in their order), the strings under
  // a node are a range, and a node's children are built together, so they are contiguous: a
  // breadth-first walk of the ranges, without recursion.
  std::vector<uint32_t> order(strings.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return strings[a] < strings[b]; });
  struct Range {
    uint32_t node;
    size_t begin, end, depth;
  };
  nodes_.emplace_back();
  labels_.push_back(0);
  std::deque<Range> pending{{0, 0, order.size(), 0}};
  while (!pending.empty()) {
    auto [node, begin, end, depth] = pending.front();
    pending.pop_front();
    for (; begin < end && strings[order[begin]].size() == depth; ++begin) {
      if (nodes_[node].index < 0 && depth > 0) nodes_[node].index = static_cast<int>(order[begin]);
    }
    nodes_[node].first_child = static_cast<uint32_t>(nodes_.size());
    while (begin < end) {
      const unsigned char byte = strings[order[begin]][depth];
      size_t stop = begin + 1;
      while (stop < end && static_cast<unsigned char>(strings[order[stop]][depth]) == byte) ++stop;
      pending.push_back({static_cast<uint32_t>(nodes_.size()), begin, stop, depth + 1});
      if (node == 0) root_child_[byte] = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
      labels_.push_back(byte);
      begin = stop;
    }
    nodes_[node].child_count = static_cast<uint32_t>(nodes_.size()) - nodes_[node].first_child;
  }
}

ByteTrie::Match ByteTrie::longest_at(std::string_view text, size_t at) const {
  Match best;
  each_at(text, at, [&best](Match m) { best = m; });
  return best;
}

uint32_t ByteTrie::child(uint32_t node, std::string_view text, size_t i) const {
  const Node& n = nodes_[node];
  if (i >= text.size() || n.child_count == 0) return 0;
  const auto first = labels_.begin() + n.first_child, last = first + n.child_count;
  const unsigned char byte = static_cast<unsigned char>(text[i]);
  const auto found = std::lower_bound(first, last, byte);
  return found != last && *found == byte ? static_cast<uint32_t>(found - labels_.begin()) : 0;
}

}  // namespace unitrain::hf
