// The pre-tokenizers of tokenizer.json: ByteLevel, Split, Sequence, BertPreTokenizer,
// Whitespace, WhitespaceSplit, Metaspace, Digits and Punctuation.
#include <algorithm>
#include <cctype>
#include <functional>

#include "unitrain/text/hf_tokenizer/byte_level.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/text_pattern.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

/// What becomes of the matches of a split (Hugging Face's SplitDelimiterBehavior).
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior read_behavior(const JsonAt& json) {
  const std::string& name = json.str();
  if (name == "Removed") return Behavior::Removed;
  if (name == "Isolated") return Behavior::Isolated;
  if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::MergedWithNext;
  if (name == "Contiguous") return Behavior::Contiguous;
  json.fail("is '" + name +
            "'; a split behavior is Removed, Isolated, MergedWithPrevious, MergedWithNext or "
            "Contiguous");
}

using Matcher = std::function<void(std::string_view, const std::function<void(size_t, size_t)>&)>;

struct Span {
  size_t begin, end;
  bool match;
};

/// `piece` split at the matches of `find`, the matches kept or merged as `behavior` says,
/// appended to `out` (empty pieces dropped), as NormalizedString::split does.
void split_piece(const std::string& piece, const Matcher& find, Behavior behavior, bool invert,
                 std::vector<std::string>& out) {
  if (behavior == Behavior::Isolated && !invert) {  // the common case (Llama-3's), directly
    size_t done = 0;
    find(piece, [&](size_t begin, size_t end) {
      if (begin > done) out.emplace_back(piece, done, begin - done);
      out.emplace_back(piece, begin, end - begin);
      done = end;
    });
    if (done < piece.size()) out.emplace_back(piece, done, piece.size() - done);
    return;
  }
  std::vector<Span> spans;
  size_t done = 0;
  find(piece, [&](size_t begin, size_t end) {
    if (begin > done) spans.push_back({done, begin, false});
    spans.push_back({begin, end, true});
    done = end;
  });
  if (done < piece.size()) spans.push_back({done, piece.size(), false});
  if (invert) {
    for (Span& s : spans) s.match = !s.match;
  }
  std::vector<Span> kept;  // match: dropped
  bool previous = false;
  switch (behavior) {
    case Behavior::Removed:
      kept = spans;
      break;
    case Behavior::Isolated:
      for (const Span& s : spans) kept.push_back({s.begin, s.end, false});
      break;
    case Behavior::Contiguous:
      for (const Span& s : spans) {
        if (s.match == previous && !kept.empty()) {
          kept.back().end = s.end;
        } else {
          kept.push_back({s.begin, s.end, false});
        }
        previous = s.match;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (const Span& s : spans) {
        if (s.match && !previous && !kept.empty()) {
          kept.back().end = s.end;
        } else {
          kept.push_back({s.begin, s.end, false});
        }
        previous = s.match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !previous && !kept.empty()) {
          kept.back().begin = it->begin;
        } else {
          kept.push_back({it->begin, it->end, false});
        }
        previous = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const Span& s : kept) {
    if (!s.match && s.end > s.begin) out.push_back(piece.substr(s.begin, s.end - s.begin));
  }
}

void split_all(std::vector<std::string>& pieces, const Matcher& find, Behavior behavior,
               bool invert = false) {
  std::vector<std::string> out;
  out.reserve(pieces.size() * 2);
  for (const std::string& piece : pieces) split_piece(piece, find, behavior, invert, out);
  pieces = std::move(out);
}

/// A matcher whose matches are single characters for which `is` holds.
Matcher each_char(bool (*is)(char32_t)) {
  return [is](std::string_view text, const std::function<void(size_t, size_t)>& on_match) {
    for (size_t i = 0; i < text.size();) {
      const size_t start = i;
      if (is(next_code_point(text, i))) on_match(start, i);
    }
  };
}

Matcher pattern_matcher(const std::shared_ptr<const TextPattern>& pattern) {
  return [pattern](std::string_view text, const std::function<void(size_t, size_t)>& on_match) {
    pattern->for_each_match(text, on_match);
  };
}

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const JsonAt& json)
      : add_prefix_space_(json.bool_or("add_prefix_space", true)),
        regex_(json.bool_or("use_regex", true)
                   ? std::make_unique<Pattern>(kGpt2Pattern, false, "GPT-2's pattern")
                   : nullptr) {}

  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    std::vector<std::string> out;
    out.reserve(pieces.size() * 4);
    for (std::string& piece : pieces) {
      if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
      if (!regex_) {
        out.push_back(std::move(piece));
        continue;
      }
      const std::string_view text = piece;
      regex_->for_each_match(text, [&](size_t begin, size_t end) {
        out.emplace_back(text.substr(begin, end - begin));
      });
    }
    pieces = std::move(out);
    p.byte_level = true;
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Pattern> regex_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const JsonAt& json)
      : find_(pattern_matcher(std::make_shared<TextPattern>(json.at("pattern")))),
        behavior_(read_behavior(json.at("behavior"))),
        invert_(json.bool_or("invert", false)) {}
  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    split_all(pieces, find_, behavior_, invert_);
  }

 private:
  Matcher find_;
  Behavior behavior_;
  bool invert_;
};

bool is_bert_punctuation(char32_t c) {
  return (c < 0x80 && std::ispunct(static_cast<int>(c))) || is_punctuation(c);
}

class BertPreTokenizer : public PreTokenizer {
 public:
  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    split_all(pieces, each_char(is_whitespace), Behavior::Removed);
    split_all(pieces, each_char(is_bert_punctuation), Behavior::Isolated);
  }
};

class WhitespacePreTokenizer : public PreTokenizer {
 public:
  WhitespacePreTokenizer()
      : words_(std::make_unique<Pattern>("\\w+|[^\\w\\s]+", false, "Whitespace's pattern")) {}
  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    const Pattern& words = *words_;
    split_all(
        pieces,
        [&](std::string_view text, const std::function<void(size_t, size_t)>& on_match) {
          words.for_each_match(text, on_match);
        },
        Behavior::Removed, /*invert=*/true);
  }

 private:
  std::unique_ptr<Pattern> words_;
};

class WhitespaceSplitPreTokenizer : public PreTokenizer {
 public:
  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    split_all(pieces, each_char(is_whitespace), Behavior::Removed);
  }
};

class PunctuationPreTokenizer : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(const JsonAt& json)
      : behavior_(json.has("behavior") ? read_behavior(json.at("behavior")) : Behavior::Isolated) {}
  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    split_all(pieces, each_char(is_bert_punctuation), behavior_);
  }

 private:
  Behavior behavior_;
};

class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(const JsonAt& json)
      : individual_(json.bool_or("individual_digits", false)) {}
  void split(Pieces& p, bool) const override {
    p.settle();
    auto& pieces = p.texts;
    split_all(pieces, each_char(is_number),
              individual_ ? Behavior::Isolated : Behavior::Contiguous);
  }

 private:
  bool individual_;
};

/// Spaces become the replacement (▁), which starts each word; one is put first as
/// prepend_scheme says (always; first: only at the start of the text; never).
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(const JsonAt& json)
      : replacement_(json.str_or("replacement", "\xE2\x96\x81")),
        split_(json.bool_or("split", true)) {
    if (auto scheme = json.find("prepend_scheme")) {
      const std::string& s = scheme->str();
      if (s != "always" && s != "first" && s != "never") {
        scheme->fail("is '" + s + "'; prepend_scheme is always, first or never");
      }
      scheme_ = s;
    } else {
      scheme_ = json.bool_or("add_prefix_space", true) ? "always" : "never";
    }
    if (replacement_.empty()) json.at("replacement").fail("is empty");
  }

  void split(Pieces& p, bool first) const override {
    p.settle();
    auto& pieces = p.texts;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string& piece = pieces[i];
      std::string replaced;
      replaced.reserve(piece.size() + 8);
      for (char c : piece) {
        if (c == ' ') {
          replaced += replacement_;
        } else {
          replaced += c;
        }
      }
      // Nothing is put before an empty piece (Hugging Face's NormalizedString::prepend).
      const bool prepend = scheme_ == "always" || (scheme_ == "first" && first && i == 0);
      if (prepend && !replaced.empty() &&
          replaced.compare(0, replacement_.size(), replacement_) != 0) {
        replaced.insert(0, replacement_);
      }
      piece = std::move(replaced);
    }
    if (!split_) return;
    const std::string& r = replacement_;
    split_all(
        pieces,
        [&r](std::string_view text, const std::function<void(size_t, size_t)>& on_match) {
          for (size_t at = text.find(r); at != std::string_view::npos;
               at = text.find(r, at + r.size())) {
            on_match(at, at + r.size());
          }
        },
        Behavior::MergedWithNext);
  }

 private:
  std::string replacement_;
  std::string scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(const JsonAt& json) {
    for (const JsonAt& item : json.at("pretokenizers").items()) {
      parts_.push_back(make_pre_tokenizer(item));
    }
  }
  void split(Pieces& pieces, bool first) const override {
    for (const auto& part : parts_) part->split(pieces, first);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

void Pieces::settle() {
  if (!byte_level) return;
  for (std::string& text : texts) text = to_byte_level(text);
  byte_level = false;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonAt& json) {
  const std::string& type = json.type();
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(json);
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(json);
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(json);
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "Punctuation") return std::make_unique<PunctuationPreTokenizer>(json);
  if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(json);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(json);
  json.unsupported("pre_tokenizer",
                   "BertPreTokenizer, ByteLevel, Digits, Metaspace, Punctuation, Sequence, Split, "
                   "Whitespace, WhitespaceSplit");
}

}  // namespace unitrain::hf
