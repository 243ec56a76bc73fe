#pragma once
// The token stream the Jinja parser reads (private to text/jinja/): where it is, what it expects
// next, its errors with the line, and the nesting bound.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/text/jinja/lexer.h"
#include "unitrain/text/jinja/nodes.h"

namespace unitrain::jinja {

/// The tokens of one template and the parser's place in them.
class TokenCursor {
 public:
  explicit TokenCursor(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

 protected:
  using T = Token::Type;

  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().type == T::Operator && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == T::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }
  [[noreturn]] void error(const std::string& message) const {
    throw EvalError{"TemplateSyntaxError", message, cur().line};
  }
  [[noreturn]] void unsupported(const std::string& message) const {
    throw EvalError{"Unsupported", message, cur().line};
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case T::End:
        return "end of template";
      case T::BlockEnd:
        return "end of statement block";
      case T::VarEnd:
        return "end of print statement";
      case T::Name:
      case T::Operator:
        return "'" + t.text + "'";
      default:
        return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) error("expected '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != T::Name) error("expected a name, got " + describe(cur()));
    return tokens_[pos_++].text;
  }
  void expect_block_end() {
    if (cur().type != T::BlockEnd)
      error("expected the end of the statement, got " + describe(cur()));
    ++pos_;
  }

  static ExprPtr node(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  /// Nesting past 200 levels (brackets, unary operators, blocks) is refused: the parser and the
  /// renderer recurse, and a hostile template must not overflow the stack.
  struct Deeper {
    explicit Deeper(TokenCursor& p) : p(p) {
      if (++p.depth_ > 200) p.error("nesting deeper than 200 levels");
    }
    ~Deeper() { --p.depth_; }
    TokenCursor& p;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace unitrain::jinja
