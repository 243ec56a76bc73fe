// The Precompiled normalizer: SentencePiece's charsmap read as Hugging Face's spm_precompiled
// crate reads it (DoubleArray::common_prefix_search, Precompiled::transform and normalize).
#include "unitrain/text/hf_tokenizer/precompiled.h"

#include <cstring>
#include <optional>

#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

/// `text` decoded as standard, padded base64 (RFC 4648 section 4, as the Rust crate's
/// BASE64_STANDARD); nullopt when it is not that.
std::optional<std::string> decode_base64(std::string_view text) {
  const auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const size_t pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    uint32_t group = 0;
    for (size_t k = 0; k < 4 - pad; ++k) {
      const int v = sextet(text[i + k]);
      if (v < 0) return std::nullopt;
      group = (group << 6) | static_cast<uint32_t>(v);
    }
    group <<= 6 * pad;
    if ((pad == 1 && (group & 0xFF)) || (pad == 2 && (group & 0xFFFF))) return std::nullopt;
    out += static_cast<char>(group >> 16);
    if (pad < 2) out += static_cast<char>((group >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(group & 0xFF);
  }
  return out;
}

/// darts-clone's unit: a label (the byte that leads to it), an offset to its children, whether
/// one of them is a leaf (whose unit holds a value: here, where the rewriting starts).
bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
uint32_t value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
uint32_t label(uint32_t unit) { return unit & 0x800000FFu; }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

class PrecompiledNormalizer : public Normalizer {
 public:
  explicit PrecompiledNormalizer(const JsonAt& json) {
    const JsonAt charsmap = json.at("precompiled_charsmap");
    const std::optional<std::string> blob = decode_base64(charsmap.str());
    if (!blob) charsmap.fail("is not standard base64 (A-Z a-z 0-9 + /, padded with =)");
    read(*blob, charsmap);
    check_trie(charsmap);
  }

  void normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size() + 8);
    size_t start = 0;
    for (const size_t end : grapheme_ends(text)) {
      const std::string_view grapheme(text.data() + start, end - start);
      std::optional<std::string_view> rewritten;
      if (grapheme.size() < 6 && (rewritten = rewrite(grapheme))) {
        out += *rewritten;
      } else {
        for (size_t i = 0; i < grapheme.size();) {
          const std::string_view c = grapheme.substr(i, utf8_length(grapheme[i]));
          rewritten = rewrite(c);
          out += rewritten ? *rewritten : c;
          i += c.size();
        }
      }
      start = end;
    }
    text = std::move(out);
  }

 private:
  void read(const std::string& blob, const JsonAt& at) {
    if (blob.size() < 4)
      at.fail("holds " + std::to_string(blob.size()) +
              " bytes; a charsmap "
              "starts with its trie's size (4 bytes)");
    const auto u32 = [&blob](size_t i) {
      uint32_t v = 0;
      for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(blob[i + k]);
      return v;
    };
    const uint64_t trie_bytes = u32(0);
    if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) {
      at.fail("says its trie has " + std::to_string(trie_bytes) + " bytes, in a charsmap of " +
              std::to_string(blob.size()) + "; the trie is whole 4-byte units after the size");
    }
    units_.resize(trie_bytes / 4);
    for (size_t i = 0; i < units_.size(); ++i) units_[i] = u32(4 + 4 * i);
    strings_ = blob.substr(4 + trie_bytes);
    if (!is_valid_utf8(strings_)) {
      at.fail("has rewritten strings (after its " + std::to_string(trie_bytes) +
              "-byte trie) that are not UTF-8");
    }
  }

  /// Walks every unit a text can reach, so that rewrite() never reads outside the charsmap:
  /// children inside the trie, values inside the strings at a character's start.
  void check_trie(const JsonAt& at) {
    const size_t size = units_.size();
    root_ = offset(units_[0]);
    const auto outside = [&](uint64_t unit, uint64_t target) {
      at.fail("has a trie whose unit " + std::to_string(unit) + " points to " +
              std::to_string(target) + ", outside its " + std::to_string(size) +
              " units: the charsmap is corrupt");
    };
    if (root_ >= size) outside(0, root_);
    std::vector<bool> seen(size, false);
    std::vector<uint32_t> pending{root_};
    seen[root_] = true;
    while (!pending.empty()) {
      const uint32_t node = pending.back();
      pending.pop_back();
      for (uint32_t c = 1; c < 256; ++c) {
        const uint32_t p = node ^ c;
        if (p >= size || label(units_[p]) != c) continue;
        const uint32_t child = p ^ offset(units_[p]);
        if (child >= size) outside(p, child);
        if (has_leaf(units_[p])) {
          const uint32_t v = value(units_[child]);
          if (v > strings_.size() ||
              (v < strings_.size() && (static_cast<unsigned char>(strings_[v]) & 0xC0) == 0x80)) {
            at.fail("has a trie whose unit " + std::to_string(child) + " points to byte " +
                    std::to_string(v) + " of its " + std::to_string(strings_.size()) +
                    " bytes of rewritten strings, not at a character: the charsmap is corrupt");
          }
        }
        if (!seen[child]) seen[child] = true, pending.push_back(child);
      }
    }
  }

  /// The rewriting of the shortest key that `text` starts with (stopping at a '\0'), or nullopt.
  std::optional<std::string_view> rewrite(std::string_view text) const {
    uint32_t node = root_;
    for (const char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == 0) break;
      const uint32_t p = node ^ c;
      if (p >= units_.size() || label(units_[p]) != c) return std::nullopt;
      node = p ^ offset(units_[p]);
      if (has_leaf(units_[p])) {
        const std::string_view rest = std::string_view(strings_).substr(value(units_[node]));
        return rest.substr(0, std::min(rest.size(), rest.find('\0')));
      }
    }
    return std::nullopt;
  }

  std::vector<uint32_t> units_;
  std::string strings_;  ///< the rewritings, each ended by '\0'
  uint32_t root_ = 0;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled_normalizer(const JsonAt& json) {
  return std::make_unique<PrecompiledNormalizer>(json);
}

}  // namespace unitrain::hf
