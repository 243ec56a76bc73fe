// Jinja2's statements (jinja2/parser.py): text, {{ print }}, and the {% blocks %} chat templates
// use (if, for, set, macro, filter, with, generation, break/continue), over the expression parser.
#include <set>

#include "unitrain/text/jinja/expression_parser.h"

namespace unitrain::jinja {
namespace {

class StatementParser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  Body parse_all() {
    Body body = subparse({});
    return body;
  }

 private:
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

  int loops_ = 0;
};

}  // namespace

Body parse(const std::string& source) { return StatementParser(tokenize(source)).parse_all(); }

}  // namespace unitrain::jinja
