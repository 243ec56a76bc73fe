// Jinja2's grammar (jinja2/parser.py), its precedence from loosest to tightest: conditional
// expression, or, and, not, comparisons and `in`, + -, ~, * / // %, **, unary - +, then a
// primary with its postfixes (.attr, [item], (call)) and its filters and tests.
#include <set>

#include "unitrain/text/jinja/lexer.h"
#include "unitrain/text/jinja/nodes.h"

namespace unitrain::jinja {
namespace {

using T = Token::Type;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_all() {
    Body body = subparse({});
    return body;
  }

 private:
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

  ExprPtr node(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  /// Statements until a {% name %} of `ends` (left at that name) or the end of the template.
  Body subparse(const std::set<std::string>& ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::End) {
        if (!ends.empty()) {
          error("unexpected end of template: expected one of '" + join(ends) +
                "' (a block left open)");
        }
        return body;
      }
      if (t.type == T::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Text;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        ++pos_;
      } else if (t.type == T::VarBegin) {
        ++pos_;
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Print;
        s->line = t.line;
        s->expr = parse_tuple(true, false);
        if (cur().type != T::VarEnd)
          error("expected the end of the print statement, got " + describe(cur()));
        ++pos_;
        body.push_back(std::move(s));
      } else if (t.type == T::BlockBegin) {
        ++pos_;
        if (cur().type == T::Name && ends.count(cur().text)) return body;
        body.push_back(statement());
      } else {
        error("unexpected " + describe(t));
      }
    }
  }

  static std::string join(const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "' or '") + n;
    return out;
  }

  std::unique_ptr<Stmt> stmt(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  std::unique_ptr<Stmt> statement() {
    Deeper guard(*this);
    const int line = cur().line;
    if (cur().type != T::Name) error("tag name expected");
    const std::string tag = tokens_[pos_++].text;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "filter") return parse_filter_block(line);
    if (tag == "with") return parse_with(line);
    if (tag == "generation") {
      auto s = stmt(Stmt::Kind::Generation, line);
      expect_block_end();
      s->body = subparse({"endgeneration"});
      ++pos_;
      expect_block_end();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loops_ == 0) error("'" + tag + "' outside of a loop");
      auto s = stmt(tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line);
      expect_block_end();
      return s;
    }
    static const std::set<std::string> known = {"include", "extends",    "import", "from",  "block",
                                                "call",    "autoescape", "do",     "trans", "raw"};
    if (known.count(tag)) {
      unsupported("{% " + tag +
                  " %} is Jinja that unitrain does not run (a chat template "
                  "renders alone: no other template, call block or extension)");
    }
    error("Encountered unknown tag '" + tag + "'.");
  }

  std::unique_ptr<Stmt> parse_if(int line) {
    auto s = stmt(Stmt::Kind::If, line);
    s->expr = parse_tuple(false, false);
    expect_block_end();
    s->body = subparse({"elif", "else", "endif"});
    const std::string end = tokens_[pos_++].text;
    if (end == "elif") {
      s->else_body.push_back(parse_if(cur().line));
      return s;
    }
    if (end == "else") {
      expect_block_end();
      s->else_body = subparse({"endif"});
      ++pos_;
    }
    expect_block_end();
    return s;
  }

  std::unique_ptr<Stmt> parse_for(int line) {
    auto s = stmt(Stmt::Kind::For, line);
    s->targets = assign_targets();
    if (!skip_name("in")) error("expected 'in', got " + describe(cur()));
    s->expr = parse_tuple(false, false, {"recursive"});
    if (skip_name("if")) s->filter = parse_expression(true);
    if (is_name("recursive")) unsupported("recursive loops are Jinja that unitrain does not run");
    expect_block_end();
    ++loops_;
    s->body = subparse({"endfor", "else"});
    --loops_;
    if (tokens_[pos_++].text == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"});
      ++pos_;
    }
    expect_block_end();
    return s;
  }

  /// A name, or names separated by commas (in parentheses or not).
  std::vector<std::string> assign_targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    do {
      if (paren && is_op(")")) break;
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  std::unique_ptr<Stmt> parse_set(int line) {
    if (cur().type == T::Name && peek().type == T::Operator && peek().text == ".") {
      auto s = stmt(Stmt::Kind::Set, line);
      s->targets = {tokens_[pos_].text};
      pos_ += 2;
      s->attr = expect_name();
      expect_op("=");
      s->expr = parse_tuple(true, false);
      expect_block_end();
      return s;
    }
    std::vector<std::string> targets = assign_targets();
    if (skip_op("=")) {
      auto s = stmt(Stmt::Kind::Set, line);
      s->targets = std::move(targets);
      s->expr = parse_tuple(true, false);
      expect_block_end();
      return s;
    }
    auto s = stmt(Stmt::Kind::SetBlock, line);
    if (targets.size() != 1) error("a block set takes one name");
    s->targets = std::move(targets);
    if (skip_op("|")) s->filter = parse_filters(nullptr, true);
    expect_block_end();
    s->body = subparse({"endset"});
    ++pos_;
    expect_block_end();
    return s;
  }

  std::unique_ptr<Stmt> parse_macro(int line) {
    auto s = stmt(Stmt::Kind::Macro, line);
    s->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string param = expect_name();
      ExprPtr fallback;
      if (skip_op("=")) {
        fallback = parse_expression(true);
      } else if (!s->params.empty() && s->params.back().second) {
        error("non-default argument follows default argument");
      }
      s->params.emplace_back(std::move(param), std::move(fallback));
    }
    ++pos_;
    expect_block_end();
    const int loops = loops_;
    loops_ = 0;
    s->body = subparse({"endmacro"});
    loops_ = loops;
    ++pos_;
    expect_block_end();
    return s;
  }

  std::unique_ptr<Stmt> parse_filter_block(int line) {
    auto s = stmt(Stmt::Kind::FilterBlock, line);
    s->filter = parse_filters(nullptr, true);
    expect_block_end();
    s->body = subparse({"endfilter"});
    ++pos_;
    expect_block_end();
    return s;
  }

  std::unique_ptr<Stmt> parse_with(int line) {
    auto s = stmt(Stmt::Kind::With, line);
    while (cur().type != T::BlockEnd) {
      if (!s->params.empty()) expect_op(",");
      std::string name = expect_name();
      expect_op("=");
      s->params.emplace_back(std::move(name), parse_expression(true));
    }
    expect_block_end();
    s->body = subparse({"endwith"});
    ++pos_;
    expect_block_end();
    return s;
  }

  bool tuple_ends(const std::set<std::string>& extra_ends) const {
    if (cur().type == T::VarEnd || cur().type == T::BlockEnd || cur().type == T::End) return true;
    if (is_op(")")) return true;
    return cur().type == T::Name && extra_ends.count(cur().text);
  }

  /// Expressions separated by commas: a tuple when there is a comma, else the one expression.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parentheses,
                      const std::set<std::string>& extra_ends = {}) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_ends(extra_ends)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) error("Expected an expression, got " + describe(cur()));
    }
    auto e = node(Expr::Kind::Tuple, line);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    Deeper guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  /// Nesting past 200 levels (brackets, unary operators, blocks) is refused: the parser and the
  /// renderer recurse, and a hostile template must not overflow the stack.
  struct Deeper {
    explicit Deeper(Parser& p) : p(p) {
      if (++p.depth_ > 200) p.error("nesting deeper than 200 levels");
    }
    ~Deeper() { --p.depth_; }
    Parser& p;
  };

  ExprPtr parse_condexpr() {
    ExprPtr value = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      ++pos_;
      auto e = node(Expr::Kind::Cond, line);
      ExprPtr test = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
      e->args.push_back(std::move(value));
      e->args.push_back(std::move(test));
      e->args.push_back(std::move(otherwise));
      value = std::move(e);
    }
    return value;
  }

  ExprPtr binary(Expr::Kind kind, ExprPtr a, ExprPtr b, const std::string& op, int line) {
    auto e = node(kind, line);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      ++pos_;
      left = binary(Expr::Kind::Or, std::move(left), parse_and(), "or", line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      ++pos_;
      left = binary(Expr::Kind::And, std::move(left), parse_not(), "and", line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = node(Expr::Kind::Not, cur().line);
      ++pos_;
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    auto e = node(Expr::Kind::Compare, line);
    while (true) {
      if (cur().type == T::Operator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        e->ops.push_back(tokens_[pos_++].text);
      } else if (skip_name("in")) {
        e->ops.push_back("in");
      } else if (is_name("not") && peek().type == T::Name && peek().text == "in") {
        pos_ += 2;
        e->ops.push_back("not in");
      } else {
        break;
      }
      e->args.push_back(parse_math1());
    }
    if (e->ops.empty()) return first;
    e->args.insert(e->args.begin(), std::move(first));
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = tokens_[pos_++];
      left = binary(Expr::Kind::Binary, std::move(left), parse_concat(), t.text, t.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = node(Expr::Kind::Concat, line);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = tokens_[pos_++];
      left = binary(Expr::Kind::Binary, std::move(left), parse_pow(), t.text, t.line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token& t = tokens_[pos_++];
      left = binary(Expr::Kind::Binary, std::move(left), parse_unary(true), t.text, t.line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Deeper guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(is_op("-") ? Expr::Kind::Neg : Expr::Kind::Pos, cur().line);
      ++pos_;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  ExprPtr literal(Value v, int line) {
    auto e = node(Expr::Kind::Literal, line);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case T::Name: {
        ++pos_;
        if (t.text == "true" || t.text == "True") return literal(Value::from(true), t.line);
        if (t.text == "false" || t.text == "False") return literal(Value::from(false), t.line);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), t.line);
        auto e = node(Expr::Kind::Name, t.line);
        e->name = t.text;
        return e;
      }
      case T::String: {
        std::string s;
        const int line = t.line;
        while (cur().type == T::String) s += tokens_[pos_++].text;  // adjacent strings join
        return literal(Value::from(std::move(s)), line);
      }
      case T::Int:
        ++pos_;
        return literal(Value::from(t.integer), t.line);
      case T::Float:
        ++pos_;
        return literal(Value::from(t.real), t.line);
      default:
        break;
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, true);
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      auto e = node(Expr::Kind::List, t.line);
      ++pos_;
      while (!is_op("]")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("]")) break;
        e->args.push_back(parse_expression(true));
      }
      ++pos_;
      return e;
    }
    if (is_op("{")) {
      auto e = node(Expr::Kind::Dict, t.line);
      ++pos_;
      while (!is_op("}")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("}")) break;
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
      }
      ++pos_;
      return e;
    }
    error("unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = parse_filters(std::move(e), false);
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target) {
    const Token& t = tokens_[pos_++];
    if (t.text == ".") {
      if (cur().type == T::Name) {
        auto e = node(Expr::Kind::Attr, t.line);
        e->name = tokens_[pos_++].text;
        e->args.push_back(std::move(target));
        return e;
      }
      if (cur().type != T::Int)
        error("expected a name or number after '.', got " + describe(cur()));
      auto e = node(Expr::Kind::Item, t.line);
      e->args.push_back(std::move(target));
      e->args.push_back(literal(Value::from(tokens_[pos_++].integer), t.line));
      return e;
    }
    // [ index ] or [ start : stop : step ]
    ExprPtr parts[3];
    int colons = 0;
    while (!is_op("]")) {
      if (skip_op(":")) {
        if (++colons > 2) error("a slice takes at most two ':'");
        continue;
      }
      if (is_op(",")) unsupported("a tuple as an index is Jinja that unitrain does not run");
      if (parts[colons]) error("expected ']' or ':', got " + describe(cur()));
      parts[colons] = parse_expression(true);
    }
    ++pos_;
    if (colons == 0) {
      if (!parts[0]) error("expected an index inside '[]'");
      auto e = node(Expr::Kind::Item, t.line);
      e->args.push_back(std::move(target));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = node(Expr::Kind::Slice, t.line);
    e->args.push_back(std::move(target));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  /// `(` positional, name=keyword `)` into `e` (its args after what it already holds).
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool any = false;
    while (!is_op(")")) {
      if (any) expect_op(",");
      if (is_op(")")) break;
      any = true;
      if (is_op("*") || is_op("**"))
        unsupported("*args and **kwargs in a call are Jinja that unitrain does not run");
      if (cur().type == T::Name && peek().type == T::Operator && peek().text == "=") {
        std::string key = tokens_[pos_].text;
        pos_ += 2;
        e.keywords.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.keywords.empty())
          error(
              "invalid syntax for function call expression (a positional argument after a keyword "
              "one)");
        e.args.push_back(parse_expression(true));
      }
    }
    ++pos_;
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = node(Expr::Kind::Call, cur().line);
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".") && peek().type == T::Name) {
      pos_ += 1;
      name += "." + expect_name();
    }
    return name;
  }

  ExprPtr parse_filters(ExprPtr operand, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) ++pos_;
      start_inline = false;
      auto e = node(Expr::Kind::Filter, cur().line);
      e->name = dotted_name();
      e->args.push_back(std::move(operand));
      if (is_op("(")) parse_call_args(*e);
      operand = std::move(e);
    }
    return operand;
  }

  ExprPtr parse_test(ExprPtr operand) {
    auto e = node(Expr::Kind::Test, cur().line);
    ++pos_;  // is
    e->negated = skip_name("not");
    e->name = dotted_name();
    e->args.push_back(std::move(operand));
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((cur().type == T::Name || cur().type == T::String || cur().type == T::Int ||
                cur().type == T::Float || is_op("(") || is_op("[") || is_op("{")) &&
               !(is_name("else") || is_name("or") || is_name("and"))) {
      if (is_name("is")) error("You cannot chain multiple tests with is");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loops_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(const std::string& source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace unitrain::jinja
