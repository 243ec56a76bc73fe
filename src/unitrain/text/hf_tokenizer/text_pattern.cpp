#include "unitrain/text/hf_tokenizer/text_pattern.h"

#include "unitrain/text/hf_tokenizer/json_at.h"

namespace unitrain::hf {

TextPattern::TextPattern(const JsonAt& json) {
  if (auto literal = json.find("String")) {
    literal_ = literal->str();
    if (literal_.empty()) json.fail("is an empty String pattern");
  } else if (auto regex = json.find("Regex")) {
    regex_ = std::make_unique<Pattern>(regex->str(), false,
                                       "tokenizer '" + json.file() + "': " + regex->path());
  } else {
    json.fail("should be {\"String\": ...} or {\"Regex\": ...}");
  }
}

void TextPattern::for_each_match(std::string_view text,
                                 const std::function<void(size_t, size_t)>& on_match) const {
  if (regex_) return regex_->for_each_match(text, on_match);
  for (size_t at = text.find(literal_); at != std::string_view::npos;
       at = text.find(literal_, at + literal_.size())) {
    on_match(at, at + literal_.size());
  }
}

std::string TextPattern::replace_all(std::string_view text, std::string_view content) const {
  std::string out;
  out.reserve(text.size());
  size_t done = 0;
  for_each_match(text, [&](size_t begin, size_t end) {
    out.append(text.substr(done, begin - done));
    out.append(content);
    done = end;
  });
  out.append(text.substr(done));
  return out;
}

}  // namespace unitrain::hf
