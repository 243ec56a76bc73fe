// The Precompiled normalizer alone through make_normalizer, on a charsmap built here unit by unit
// (darts-clone's layout, as SentencePiece writes it). Expected texts follow Hugging Face's
// spm_precompiled (Precompiled::normalize_string); parity on SentencePiece's real nmt_nfkc
// charsmap is hf_tokenizer_test.cpp's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {
namespace {

using nlohmann::json;

std::string precompiled_base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<unsigned char>(bytes[i + 2]);
    out += digits[group >> 18];
    out += digits[(group >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(group >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[group & 63] : '=';
  }
  return out;
}

/// A charsmap of 512 units: "A" -> "a", "AB" -> "xy", "\x01" -> "" (deleted). The root's
/// children are at 256 ^ byte; a unit is label | has_leaf << 8 | offset << 10, and a leaf's
/// value unit (bit 31 set) sits where its parent's offset leads.
struct PrecompiledCharsmap {
  std::vector<uint32_t> units = std::vector<uint32_t>(512, 0);
  std::string strings = std::string("a\0xy\0", 5);

  PrecompiledCharsmap() {
    units[0] = 256u << 10;                          // the root: children at 256 ^ byte
    units[256 ^ 'A'] = 'A' | 1u << 8 | 193u << 10;  // 321 ^ 193 = 384
    units[384] = 0x80000000u | 0;                   // "A" -> strings[0]: "a"
    units[384 ^ 'B'] = 'B' | 1u << 8 | 50u << 10;   // 450 ^ 50 = 496
    units[496] = 0x80000000u | 2;                   // "AB" -> strings[2]: "xy"
    units[256 ^ 1] = 1 | 1u << 8 | 45u << 10;       // 257 ^ 45 = 300
    units[300] = 0x80000000u | 4;                   // "\x01" -> strings[4]: ""
  }
  std::string bytes() const {
    std::string out;
    const auto u32 = [&out](uint32_t v) {
      for (int k = 0; k < 4; ++k) out += static_cast<char>((v >> (8 * k)) & 0xFF);
    };
    u32(static_cast<uint32_t>(units.size() * 4));
    for (uint32_t u : units) u32(u);
    return out + strings;
  }
};

json precompiled_section(const std::string& bytes) {
  return {{"type", "Precompiled"}, {"precompiled_charsmap", precompiled_base64(bytes)}};
}

std::string precompiled_output(const std::string& bytes, std::string text) {
  const std::string file = "t.json";
  const json section = precompiled_section(bytes);
  make_normalizer(JsonAt(section, "normalizer", file))->normalize(text);
  return text;
}

std::string precompiled_error(const json& section) {
  const std::string file = "t.json";
  return test::config_error_of([&] { make_normalizer(JsonAt(section, "normalizer", file)); });
}

TEST(HfPrecompiled, RewritesGraphemesByTheShortestKeyAndLongOnesCharacterByCharacter) {
  const std::string map = PrecompiledCharsmap().bytes();
  EXPECT_EQ(precompiled_output(map, "AB"), "aB");  // two graphemes: "A" -> "a", "B" stays
  EXPECT_EQ(precompiled_output(map, "zA\x01z"), "zaz");
  // "A" + U+0301 is one grapheme of 3 bytes: the shortest key it starts with, "A", rewrites it
  // whole (the mark is dropped, as Hugging Face's spm_precompiled does).
  EXPECT_EQ(precompiled_output(map, "A\xCC\x81!"), "a!");
  // Three marks make 7 bytes: character by character, the marks kept.
  EXPECT_EQ(precompiled_output(map, "A\xCC\x81\xCC\x81\xCC\x81"), "a\xCC\x81\xCC\x81\xCC\x81");
  EXPECT_EQ(precompiled_output(map, "\xE7\x99\xBD\r\n"), "\xE7\x99\xBD\r\n");
  EXPECT_EQ(precompiled_output(map, ""), "");
}

TEST(HfPrecompiled, RefusesACorruptCharsmapNamingThePath) {
  const PrecompiledCharsmap good;
  const auto error_with = [](const std::string& bytes) {
    return precompiled_error(precompiled_section(bytes));
  };
  EXPECT_TRUE(
      test::contains(precompiled_error({{"type", "Precompiled"}, {"precompiled_charsmap", "AAA*"}}),
                     "normalizer.precompiled_charsmap is not standard base64"));
  EXPECT_TRUE(test::contains(
      precompiled_error({{"type", "Precompiled"}, {"precompiled_charsmap", nullptr}}),
      "normalizer.precompiled_charsmap should be a string, not null"));
  EXPECT_TRUE(test::contains(error_with("ab"), "holds 2 bytes"));
  std::string bytes = good.bytes();
  bytes[0] = 7;  // a trie of 7 bytes: no whole units
  EXPECT_TRUE(test::contains(error_with(bytes), "says its trie has 2055 bytes"));
  EXPECT_TRUE(test::contains(error_with(good.bytes().substr(0, 1000)),
                             "says its trie has 2048 bytes, in a charsmap of 1000"));
  PrecompiledCharsmap bad_strings = good;
  bad_strings.strings = std::string("a\0\xFF", 3);
  EXPECT_TRUE(test::contains(error_with(bad_strings.bytes()), "that are not UTF-8"));
  PrecompiledCharsmap bad_value = good;
  bad_value.units[496] = 0x80000000u | 99;
  EXPECT_TRUE(test::contains(error_with(bad_value.bytes()),
                             "unit 496 points to byte 99 of its 5 bytes of rewritten strings"));
  PrecompiledCharsmap bad_child = good;
  bad_child.units[256 ^ 'A'] = 'A' | 1u << 8 | 4000u << 10;
  EXPECT_TRUE(test::contains(error_with(bad_child.bytes()),
                             "unit 321 points to 3809, outside its 512 units"));
  PrecompiledCharsmap bad_root = good;
  bad_root.units[0] = 1000u << 10;
  EXPECT_TRUE(test::contains(error_with(bad_root.bytes()), "unit 0 points to 1000"));
}

TEST(HfPrecompiled, ACharsmapWithAnyByteChangedIsRefusedOrReadsInsideItself) {
  const std::string good = PrecompiledCharsmap().bytes();
  std::mt19937 rng(61);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = good;
    const size_t at = rng() % bytes.size();
    bytes[at] = static_cast<char>(rng() % 256);
    if (i % 10 == 0) bytes.resize(rng() % bytes.size());
    const std::string file = "t.json";
    const json section = precompiled_section(bytes);
    try {
      const auto normalizer = make_normalizer(JsonAt(section, "normalizer", file));
      for (std::string text : {"AB", "A\xCC\x81", "\x01\xC3\xA9 \xE7\x99\xBD"}) {
        normalizer->normalize(text);
      }
    } catch (const ConfigError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace unitrain::hf
