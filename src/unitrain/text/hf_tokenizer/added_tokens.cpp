#include "unitrain/text/hf_tokenizer/added_tokens.h"

#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

bool is_word_char(char32_t c) { return c == '_' || is_letter(c) || is_number(c); }

/// The code point that ends at byte `end` of `s`.
char32_t code_point_before(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return next_code_point(s, start);
}

std::vector<std::string_view> contents(const std::vector<const AddedToken*>& tokens) {
  std::vector<std::string_view> out;
  out.reserve(tokens.size());
  for (const AddedToken* t : tokens) out.emplace_back(t->content);
  return out;
}

}  // namespace

AddedTokenFinder::AddedTokenFinder(const std::vector<const AddedToken*>& tokens)
    : tokens_(tokens), trie_(contents(tokens)) {}

std::vector<Segment> AddedTokenFinder::split(std::string_view text) const {
  std::vector<Segment> out;
  if (tokens_.empty()) {
    out.push_back({text, -1});
    return out;
  }
  size_t done = 0;  // the end of what the segments so far cover
  // Valid UTF-8 text and tokens: a token found starts and ends on code point boundaries.
  for (size_t at = 0; at < text.size();) {
    const ByteTrie::Match match = trie_.longest_at(text, at);
    if (match.index < 0) {
      ++at;
      continue;
    }
    const size_t begin = at, end = at + match.length;
    at = end;                    // the next search starts after this match, kept or not
    if (begin < done) continue;  // inside the whitespace an rstrip took
    const AddedToken* token = tokens_[match.index];
    if (token->single_word &&
        ((begin > 0 && is_word_char(code_point_before(text, begin))) || (end < text.size() && [&] {
           size_t i = end;
           return is_word_char(next_code_point(text, i));
         }()))) {
      continue;
    }
    size_t start = begin, stop = end;
    if (token->lstrip) {
      while (start > done && is_whitespace(code_point_before(text, start))) {
        do --start;
        while (start > done && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80);
      }
    }
    if (token->rstrip) {
      for (size_t i = stop; i < text.size();) {
        if (!is_whitespace(next_code_point(text, i))) break;
        stop = i;
      }
    }
    if (start > done) out.push_back({text.substr(done, start - done), -1});
    out.push_back({{}, token->id});
    done = stop;
  }
  if (done < text.size() || out.empty()) out.push_back({text.substr(done), -1});
  return out;
}

}  // namespace unitrain::hf
