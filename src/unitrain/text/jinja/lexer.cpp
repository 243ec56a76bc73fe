#include "unitrain/text/jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "unitrain/text/jinja/py_str.h"
#include "unitrain/text/jinja/value.h"

namespace unitrain::jinja {
namespace {

[[noreturn]] void syntax_error(int line, std::string message) {
  throw EvalError{"TemplateSyntaxError", std::move(message), line};
}

/// Newlines as "\n" (Jinja2's newline_sequence) and one trailing newline dropped
/// (keep_trailing_newline off).
std::string normalized(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// Python's str.rstrip() (any Unicode whitespace).
std::string rstrip(std::string_view s) { return py::strip(s, nullptr, false, true); }

/// A string literal's body with Python's escapes read (Jinja2 decodes it as unicode-escape).
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    auto hex = [&](size_t digits) {
      const std::string h(body.substr(i + 1, digits));
      if (h.size() != digits || !std::all_of(h.begin(), h.end(), ::isxdigit)) {
        syntax_error(line, "truncated \\" + std::string(1, c) + " escape in a string");
      }
      i += digits;
      return static_cast<char32_t>(std::strtoul(h.c_str(), nullptr, 16));
    };
    switch (c) {
      case '\n':
        break;  // a line continuation
      case '\\':
      case '\'':
      case '"':
        out += c;
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
        out += py::encode({hex(2)});
        break;
      case 'u':
        out += py::encode({hex(4)});
        break;
      case 'U':
        out += py::encode({hex(8)});
        break;
      case 'N':
        syntax_error(line, "\\N{...} escapes in strings are not read by unitrain's Jinja");
      default:
        if (c >= '0' && c <= '7') {
          char32_t v = 0;
          size_t n = 0;
          for (; n < 3 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++n, ++i) {
            v = v * 8 + static_cast<char32_t>(body[i] - '0');
          }
          --i;
          out += py::encode({v});
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalized(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t open = next_opener();
      std::string text = src_.substr(pos_, open == std::string::npos ? open : open - pos_);
      if (open == std::string::npos) {
        push_text(text, text);
        break;
      }
      const char kind = src_[open + 1];
      const char sign = open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+')
                            ? src_[open + 2]
                            : 0;
      const std::string original = text;
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+' && kind != '{') {
        lstrip(text);
      }
      push_text(text, original);
      pos_ = open + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        comment();
      } else if (kind == '%' && raw_begins()) {
        raw();
      } else {
        tag(kind == '%');
      }
    }
    tokens_.push_back({Token::Type::End, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t next_opener() const {
    for (size_t at = src_.find('{', pos_); at != std::string::npos; at = src_.find('{', at + 1)) {
      if (at + 1 < src_.size() &&
          (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#')) {
        return at;
      }
    }
    return std::string::npos;
  }

  /// lstrip_blocks: spaces and tabs between a line's start and a block or comment tag go.
  void lstrip(std::string& text) const {
    const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (line_start == 0 && !line_starting_) return;
    if (text.find_first_not_of(" \t", line_start) == std::string::npos) text.resize(line_start);
  }

  void push_text(const std::string& text, const std::string& original) {
    if (!text.empty()) tokens_.push_back({Token::Type::Text, text, line_});
    line_ += static_cast<int>(std::count(original.begin(), original.end(), '\n'));
  }

  /// Past a tag's end at `end` (the first byte after it): `-` took the whitespace after it,
  /// `+` nothing, else trim_blocks one newline.
  void finish_tag(size_t end, char sign, bool block) {
    size_t after = end;
    if (sign == '-') {
      while (after < src_.size() && is_space(src_[after])) ++after;
    } else if (sign != '+' && block && after < src_.size() && src_[after] == '\n') {
      ++after;
    }
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<long>(pos_),
                                         src_.begin() + static_cast<long>(after), '\n'));
    line_starting_ = after > 0 && src_[after - 1] == '\n';
    pos_ = after;
  }

  void comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) syntax_error(line_, "Missing end of comment tag");
    const char sign =
        end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    finish_tag(end + 2, sign, true);
  }

  /// `{% raw %}` at pos_ (after the opener and its sign); pos_ moves past it when it is.
  bool raw_begins() {
    size_t i = pos_;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    while (i < src_.size() && is_space(src_[i])) ++i;
    char sign = 0;
    if (i < src_.size() && src_[i] == '-') sign = src_[i++];
    if (src_.compare(i, 2, "%}") != 0) return false;
    finish_tag(i + 2, sign == '-' ? '-' : '+', true);  // raw's start never trims a newline
    return true;
  }

  void raw() {
    for (size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 2)) {
      size_t i = at + 2;
      const char sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : 0;
      if (sign) ++i;
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (src_.compare(i, 6, "endraw") != 0) continue;
      i += 6;
      while (i < src_.size() && is_space(src_[i])) ++i;
      const char end_sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : 0;
      if (end_sign) ++i;
      if (src_.compare(i, 2, "%}") != 0) continue;
      std::string text = src_.substr(pos_, at - pos_);
      const std::string original = text;
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+') {
        lstrip(text);
      }
      push_text(text, original);
      pos_ = at;
      finish_tag(i + 2, end_sign, true);
      return;
    }
    syntax_error(line_, "Missing end of raw directive");
  }

  void tag(bool block) {
    tokens_.push_back({block ? Token::Type::BlockBegin : Token::Type::VarBegin, "", line_});
    std::vector<char> open;  // brackets not yet closed: the tag cannot end inside them
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        syntax_error(line_, std::string("unexpected end of template, expected the end of the ") +
                                (block ? "statement ('%}')" : "print statement ('}}')"));
      }
      if (open.empty() && tag_ends(block)) return;
      const char c = src_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        number();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = pos_;
        while (end < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
          ++end;
        tokens_.push_back({Token::Type::Name, src_.substr(pos_, end - pos_), line_});
        pos_ = end;
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        op(open);
      }
    }
  }

  bool tag_ends(bool block) {
    const char close = block ? '%' : '}';
    char sign = 0;
    size_t i = pos_;
    if (src_[i] == '-' || (block && src_[i] == '+')) sign = src_[i++];
    if (i + 1 >= src_.size() || src_[i] != close || src_[i + 1] != '}') return false;
    tokens_.push_back({block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", line_});
    finish_tag(i + 2, sign, block);
    return true;
  }

  void number() {
    if (src_[pos_] == '0' && pos_ + 2 < src_.size() &&
        std::string_view("xXoObB").find(src_[pos_ + 1]) != std::string_view::npos) {
      const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[pos_ + 1])));
      const int base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
      size_t i = pos_ + 2;
      std::string digits;
      while (i < src_.size() &&
             (std::isxdigit(static_cast<unsigned char>(src_[i])) || src_[i] == '_')) {
        if (src_[i] != '_') digits += src_[i];
        ++i;
      }
      char* end = nullptr;
      errno = 0;
      Token t{Token::Type::Int, src_.substr(pos_, i - pos_), line_};
      t.integer = std::strtoll(digits.c_str(), &end, base);
      if (digits.empty() || *end || errno == ERANGE)
        syntax_error(line_, "invalid number " + t.text);
      tokens_.push_back(std::move(t));
      pos_ = i;
      return;
    }
    size_t i = pos_;
    auto digits = [&] {
      const size_t start = i;
      while (i < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[i])) ||
                                 (src_[i] == '_' && i > start && i + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[i + 1]))))) {
        ++i;
      }
      return i > start;
    };
    digits();
    bool is_float = false;
    const bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    if (!after_dot && i + 1 < src_.size() && src_[i] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[i + 1]))) {
      ++i;
      digits();
      is_float = true;
    }
    if (!after_dot && i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
      size_t j = i + 1;
      if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
      if (j < src_.size() && std::isdigit(static_cast<unsigned char>(src_[j]))) {
        i = j;
        digits();
        is_float = true;
      }
    }
    std::string text = src_.substr(pos_, i - pos_);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    Token t{is_float ? Token::Type::Float : Token::Type::Int, text, line_};
    if (is_float) {
      t.real = std::strtod(text.c_str(), nullptr);
    } else {
      errno = 0;
      t.integer = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE)
        syntax_error(line_, "integer " + text + " is too large for unitrain's Jinja");
    }
    tokens_.push_back(std::move(t));
    pos_ = i;
  }

  void string_literal(char quote) {
    size_t i = pos_ + 1;
    while (i < src_.size() && src_[i] != quote) i += src_[i] == '\\' ? 2 : 1;
    if (i >= src_.size())
      syntax_error(line_, "unexpected char " + std::string(1, quote) + " (a string left open)");
    const std::string body = src_.substr(pos_ + 1, i - pos_ - 1);
    tokens_.push_back({Token::Type::String, unescape(body, line_), line_});
    line_ += static_cast<int>(std::count(body.begin(), body.end(), '\n'));
    pos_ = i + 1;
  }

  void op(std::vector<char>& open) {
    static const char* const two[] = {"**", "//", "==", "!=", ">=", "<="};
    for (const char* o : two) {
      if (src_.compare(pos_, 2, o) == 0) {
        tokens_.push_back({Token::Type::Operator, o, line_});
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-*/%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      syntax_error(line_, "unexpected char '" + std::string(1, c) + "'");
    }
    if (c == '(' || c == '[' || c == '{') open.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (open.empty()) syntax_error(line_, "unexpected '" + std::string(1, c) + "'");
      if (open.back() != c) {
        syntax_error(line_, "unexpected '" + std::string(1, c) + "', expected '" +
                                std::string(1, open.back()) + "'");
      }
      open.pop_back();
    }
    tokens_.push_back({Token::Type::Operator, std::string(1, c), line_});
    ++pos_;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace unitrain::jinja
