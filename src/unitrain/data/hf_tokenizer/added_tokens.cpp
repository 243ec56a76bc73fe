#include "unitrain/data/hf_tokenizer/added_tokens.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "unitrain/data/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

/// `text` as a PCRE2 pattern that matches it literally.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

bool is_word_char(char32_t c) { return c == '_' || is_letter(c) || is_number(c); }

/// The code point that ends at byte `end` of `s`.
char32_t code_point_before(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return next_code_point(s, start);
}

}  // namespace

AddedTokenFinder::AddedTokenFinder(const std::vector<const AddedToken*>& tokens) : tokens_(tokens) {
  if (tokens_.empty()) return;
  // The longest first: PCRE2 takes the first alternative that matches at a position.
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const AddedToken* a, const AddedToken* b) {
    return a->content.size() > b->content.size();
  });
  std::string alternatives;
  for (const AddedToken* t : tokens_) {
    if (!alternatives.empty()) alternatives += '|';
    alternatives += escaped(t->content);
  }
  pattern_ = std::make_unique<Pattern>(alternatives, false, "the added tokens");
}

AddedTokenFinder::~AddedTokenFinder() = default;

std::vector<Segment> AddedTokenFinder::split(std::string_view text) const {
  std::vector<Segment> out;
  if (!pattern_) {
    out.push_back({text, -1});
    return out;
  }
  size_t done = 0;
  pattern_->for_each_match(text, [&](size_t begin, size_t end) {
    if (begin < done) return;  // inside the whitespace an rstrip took
    const std::string_view found = text.substr(begin, end - begin);
    const AddedToken* token = nullptr;
    for (const AddedToken* t : tokens_) {
      if (t->content == found) {
        token = t;
        break;
      }
    }
    if (token == nullptr) return;
    if (token->single_word &&
        ((begin > 0 && is_word_char(code_point_before(text, begin))) || (end < text.size() && [&] {
           size_t i = end;
           return is_word_char(next_code_point(text, i));
         }()))) {
      return;
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
  });
  if (done < text.size() || out.empty()) out.push_back({text.substr(done), -1});
  return out;
}

}  // namespace unitrain::hf
