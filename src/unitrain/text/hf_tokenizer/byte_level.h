#pragma once
// GPT-2's byte-level alphabet: each of the 256 bytes as one printable character, so that any
// text's bytes become a string of vocabulary characters, and back.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace unitrain::hf {

/// The character (as UTF-8) that stands for byte b: '!'..'~', '¡'..'¬', '®'..'ÿ' for
/// themselves, the other bytes for U+0100 onwards in byte order (GPT-2's bytes_to_unicode).
const std::array<std::string, 256>& byte_to_char();
/// The byte code point `c` stands for, or -1 when it is none.
int char_to_byte(char32_t c);
/// `text` with each byte replaced by its character.
std::string to_byte_level(std::string_view text);

/// GPT-2's pattern, which ByteLevel's use_regex splits with.
inline constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace unitrain::hf
