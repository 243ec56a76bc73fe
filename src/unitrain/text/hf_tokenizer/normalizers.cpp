// The normalizers of tokenizer.json: NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents,
// Replace, Prepend, BertNormalizer and Sequence (Precompiled is precompiled.cpp's).
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/pattern.h"
#include "unitrain/text/hf_tokenizer/precompiled.h"
#include "unitrain/text/hf_tokenizer/text_pattern.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

class FormNormalizer : public Normalizer {
 public:
  explicit FormNormalizer(NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = normalize_form(text, form_); }

 private:
  NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = lowercase(text); }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!is_whitespace(next_code_point(text, next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t next = start;
        if (!is_whitespace(next_code_point(text, next))) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    if (is_ascii(text)) return;
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      const size_t start = i;
      if (!is_nonspacing_mark(next_code_point(text, i))) out.append(text, start, i - start);
    }
    text = std::move(out);
  }
};

class ReplaceNormalizer : public Normalizer {
 public:
  explicit ReplaceNormalizer(const JsonAt& json)
      : pattern_(json.at("pattern")), content_(json.at("content").str()) {}
  void normalize(std::string& text) const override { text = pattern_.replace_all(text, content_); }

 private:
  TextPattern pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

/// BERT's cleaning (control characters out, whitespace to spaces), spaces around CJK
/// ideographs, accents stripped, lower case: in that order, as Hugging Face's BertNormalizer.
class BertNormalizer : public Normalizer {
 public:
  explicit BertNormalizer(const JsonAt& json)
      : clean_text_(json.bool_or("clean_text", true)),
        chinese_chars_(json.bool_or("handle_chinese_chars", true)),
        lowercase_(json.bool_or("lowercase", true)),
        strip_accents_(json.bool_or("strip_accents", lowercase_)) {}

  void normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size() + 8);
    for (size_t i = 0; i < text.size();) {
      const size_t start = i;
      const char32_t c = next_code_point(text, i);
      const bool bert_space = c == '\t' || c == '\n' || c == '\r' || is_whitespace(c);
      if (clean_text_) {
        if (c == 0 || c == 0xFFFD || (!bert_space && is_other(c))) continue;
        if (bert_space) {
          out += ' ';
          continue;
        }
      }
      if (chinese_chars_ && is_cjk(c)) {
        out += ' ';
        out.append(text, start, i - start);
        out += ' ';
        continue;
      }
      out.append(text, start, i - start);
    }
    if (strip_accents_ && !is_ascii(out)) {
      out = normalize_form(out, NormalForm::Nfd);
      StripAccentsNormalizer().normalize(out);
    }
    text = lowercase_ ? lowercase(out) : std::move(out);
  }

 private:
  static bool is_cjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
  }

  bool clean_text_, chinese_chars_, lowercase_, strip_accents_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(const JsonAt& json) {
    for (const JsonAt& item : json.at("normalizers").items())
      parts_.push_back(make_normalizer(item));
  }
  void normalize(std::string& text) const override {
    for (const auto& part : parts_) part->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonAt& json) {
  const std::string& type = json.type();
  if (type == "NFC") return std::make_unique<FormNormalizer>(NormalForm::Nfc);
  if (type == "NFD") return std::make_unique<FormNormalizer>(NormalForm::Nfd);
  if (type == "NFKC") return std::make_unique<FormNormalizer>(NormalForm::Nfkc);
  if (type == "NFKD") return std::make_unique<FormNormalizer>(NormalForm::Nfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(json.bool_or("strip_left", true),
                                             json.bool_or("strip_right", true));
  }
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(json);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(json.at("prepend").str());
  if (type == "BertNormalizer") return std::make_unique<BertNormalizer>(json);
  if (type == "Sequence") return std::make_unique<SequenceNormalizer>(json);
  if (type == "Precompiled") return make_precompiled_normalizer(json);
  json.unsupported(
      "normalizer",
      "BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, Precompiled, Prepend, Replace, "
      "Sequence, Strip, StripAccents");
}

}  // namespace unitrain::hf
