// The decoders of tokenizer.json: ByteLevel, WordPiece, Metaspace, Replace, ByteFallback, Fuse,
// Strip, BPEDecoder and Sequence.
#include <cctype>
#include <cstring>

#include "unitrain/text/hf_tokenizer/byte_level.h"
#include "unitrain/text/hf_tokenizer/components.h"
#include "unitrain/text/hf_tokenizer/json_at.h"
#include "unitrain/text/hf_tokenizer/text_pattern.h"
#include "unitrain/text/hf_tokenizer/unicode_text.h"

namespace unitrain::hf {
namespace {

/// The bytes the characters stand for, as one text (invalid UTF-8 as U+FFFD). A token with a
/// character outside the byte alphabet (an added token such as "<|eot_id|>" in another
/// alphabet) gives its own bytes.
class ByteLevelDecoder : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      const size_t mark = bytes.size();
      for (size_t i = 0; i < token.size();) {
        const int b = char_to_byte(next_code_point(token, i));
        if (b < 0) {
          bytes.resize(mark);
          bytes += token;
          break;
        }
        bytes += static_cast<char>(b);
      }
    }
    tokens.assign(1, valid_utf8(bytes));
  }
};

/// "##" pieces join the previous one; others are parted by a space; cleanup removes spaces
/// before punctuation and contractions.
class WordPieceDecoder : public Decoder {
 public:
  explicit WordPieceDecoder(const JsonAt& json)
      : prefix_(json.str_or("prefix", "##")), cleanup_(json.bool_or("cleanup", true)) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i > 0) {
        if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, " ");
        }
      }
      if (cleanup_) t = clean_up(t);
    }
  }

 private:
  static std::string clean_up(std::string t) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) {
      const std::string f = from;
      for (size_t at = t.find(f); at != std::string::npos; at = t.find(f, at + std::strlen(to))) {
        t.replace(at, f.size(), to);
      }
    }
    return t;
  }

  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(const JsonAt& json)
      : replacement_(json.str_or("replacement", "\xE2\x96\x81")) {
    const std::string scheme =
        json.str_or("prepend_scheme", json.bool_or("add_prefix_space", true) ? "always" : "never");
    strip_first_ = scheme != "never";
  }
  void decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t at = 0; at < t.size();) {
        if (t.compare(at, replacement_.size(), replacement_) == 0) {
          out += ' ';
          at += replacement_.size();
        } else {
          out += t[at++];
        }
      }
      if (i == 0 && strip_first_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class ReplaceDecoder : public Decoder {
 public:
  explicit ReplaceDecoder(const JsonAt& json)
      : pattern_(json.at("pattern")), content_(json.at("content").str()) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = pattern_.replace_all(t, content_);
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

/// Runs of <0xXX> tokens become the text of their bytes (one U+FFFD a byte when they are not
/// valid UTF-8).
class ByteFallbackDecoder : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    const auto flush = [&] {
      if (bytes.empty()) return;
      if (is_valid_utf8(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < bytes.size(); ++i) out.push_back("\xEF\xBF\xBD");
      }
      bytes.clear();
    };
    for (std::string& t : tokens) {
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(t[3]) &&
          std::isxdigit(t[4])) {
        bytes += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, all);
  }
};

/// Up to `start` leading and `stop` trailing `content` characters off each token.
class StripDecoder : public Decoder {
 public:
  explicit StripDecoder(const JsonAt& json)
      : content_(json.at("content").str()),
        start_(json.int_or("start", 0)),
        stop_(json.int_or("stop", 0)) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      for (int64_t k = 0; k < start_ && t.compare(0, content_.size(), content_) == 0; ++k) {
        t.erase(0, content_.size());
      }
      for (int64_t k = 0; k < stop_ && t.size() >= content_.size() &&
                          t.compare(t.size() - content_.size(), content_.size(), content_) == 0;
           ++k) {
        t.resize(t.size() - content_.size());
      }
    }
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

/// The end-of-word suffix becomes a space (none after the last token).
class BpeDecoder : public Decoder {
 public:
  explicit BpeDecoder(const JsonAt& json) : suffix_(json.str_or("suffix", "</w>")) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      const std::string by = i + 1 == tokens.size() ? "" : " ";
      for (size_t at = t.find(suffix_); at != std::string::npos;
           at = t.find(suffix_, at + by.size())) {
        t.replace(at, suffix_.size(), by);
      }
    }
  }

 private:
  std::string suffix_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(const JsonAt& json) {
    for (const JsonAt& item : json.at("decoders").items()) parts_.push_back(make_decoder(item));
  }
  void decode(std::vector<std::string>& tokens) const override {
    for (const auto& part : parts_) part->decode(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonAt& json) {
  const std::string& type = json.type();
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(json);
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(json);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(json);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(json);
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(json);
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(json);
  json.unsupported("decoder",
                   "BPEDecoder, ByteFallback, ByteLevel, Fuse, Metaspace, Replace, Sequence, "
                   "Strip, WordPiece");
}

}  // namespace unitrain::hf
