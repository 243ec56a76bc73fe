#include "unitrain/text/hf_tokenizer/byte_level.h"

#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

bool prints_as_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/// The code point of each byte.
const std::array<char32_t, 256>& byte_code_points() {
  static const std::array<char32_t, 256> points = [] {
    std::array<char32_t, 256> p{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) p[b] = prints_as_itself(b) ? static_cast<char32_t>(b) : next++;
    return p;
  }();
  return points;
}

}  // namespace

const std::array<std::string, 256>& byte_to_char() {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> c;
    for (int b = 0; b < 256; ++b) append_utf8(c[b], byte_code_points()[b]);
    return c;
  }();
  return chars;
}

int char_to_byte(char32_t c) {
  static const std::array<int16_t, 512> bytes = [] {
    std::array<int16_t, 512> m;
    m.fill(-1);
    for (int b = 0; b < 256; ++b) m[byte_code_points()[b]] = static_cast<int16_t>(b);
    return m;
  }();
  return c < 512 ? bytes[c] : -1;
}

std::string to_byte_level(std::string_view text) {
  const auto& chars = byte_to_char();
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) out += chars[static_cast<unsigned char>(c)];
  return out;
}

}  // namespace unitrain::hf
