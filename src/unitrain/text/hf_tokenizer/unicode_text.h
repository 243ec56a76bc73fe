#pragma once
// UTF-8 and Unicode facts the tokenizer.json components need, through utf8proc (Debian's
// libutf8proc): normalization forms, general categories, lower case, grapheme clusters.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain::hf {

/// The code point starting at byte `i` of valid UTF-8 `s`; `i` moves past it.
char32_t next_code_point(std::string_view s, size_t& i);
/// The byte length of the UTF-8 sequence that starts with `lead`.
inline size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}
void append_utf8(std::string& out, char32_t c);
/// `s` with each invalid UTF-8 sequence replaced by U+FFFD (as Rust's from_utf8_lossy and
/// Python's errors="replace" do); `s` unchanged when it is valid.
std::string valid_utf8(std::string_view s);
bool is_valid_utf8(std::string_view s);
bool is_ascii(std::string_view s);

enum class NormalForm { Nfc, Nfd, Nfkc, Nfkd };
std::string normalize_form(std::string_view s, NormalForm form);

/// Unicode's White_Space property (Rust's char::is_whitespace).
bool is_whitespace(char32_t c);
/// General categories L*, N*, P*, Mn, and C{c,f,n,o,s} (Rust's is_other).
bool is_letter(char32_t c);
bool is_number(char32_t c);
bool is_punctuation(char32_t c);
bool is_nonspacing_mark(char32_t c);
bool is_other(char32_t c);
/// Rust's char::to_lowercase of `c` appended to `out` (full mapping: U+0130 gives two).
void append_lowercase(std::string& out, char32_t c);
std::string lowercase(std::string_view s);

/// Where each extended grapheme cluster of valid UTF-8 `s` ends (Unicode's UAX #29, as Rust's
/// unicode-segmentation graphemes(true) splits), in order; the last is s.size().
std::vector<size_t> grapheme_ends(std::string_view s);

}  // namespace unitrain::hf
