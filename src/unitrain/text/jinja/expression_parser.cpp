#include "unitrain/text/jinja/expression_parser.h"

namespace unitrain::jinja {

bool ExpressionParser::tuple_ends(const std::set<std::string>& extra_ends) const {
  if (cur().type == T::VarEnd || cur().type == T::BlockEnd || cur().type == T::End) return true;
  if (is_op(")")) return true;
  return cur().type == T::Name && extra_ends.count(cur().text);
}

/// Expressions separated by commas: a tuple when there is a comma, else the one expression.
ExprPtr ExpressionParser::parse_tuple(bool with_condexpr, bool explicit_parentheses,
                                      const std::set<std::string>& extra_ends) {
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

ExprPtr ExpressionParser::parse_expression(bool with_condexpr) {
  Deeper guard(*this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr ExpressionParser::parse_condexpr() {
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

ExprPtr ExpressionParser::binary(Expr::Kind kind, ExprPtr a, ExprPtr b, const std::string& op,
                                 int line) {
  auto e = node(kind, line);
  e->name = op;
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}

ExprPtr ExpressionParser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = cur().line;
    ++pos_;
    left = binary(Expr::Kind::Or, std::move(left), parse_and(), "or", line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = cur().line;
    ++pos_;
    left = binary(Expr::Kind::And, std::move(left), parse_not(), "and", line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    auto e = node(Expr::Kind::Not, cur().line);
    ++pos_;
    e->args.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
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

ExprPtr ExpressionParser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = tokens_[pos_++];
    left = binary(Expr::Kind::Binary, std::move(left), parse_concat(), t.text, t.line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_concat() {
  const int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = node(Expr::Kind::Concat, line);
  e->args.push_back(std::move(first));
  while (skip_op("~")) e->args.push_back(parse_math2());
  return e;
}

ExprPtr ExpressionParser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = tokens_[pos_++];
    left = binary(Expr::Kind::Binary, std::move(left), parse_pow(), t.text, t.line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const Token& t = tokens_[pos_++];
    left = binary(Expr::Kind::Binary, std::move(left), parse_unary(true), t.text, t.line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
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

ExprPtr ExpressionParser::literal(Value v, int line) {
  auto e = node(Expr::Kind::Literal, line);
  e->value = std::move(v);
  return e;
}

ExprPtr ExpressionParser::parse_primary() {
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

ExprPtr ExpressionParser::parse_postfix(ExprPtr e) {
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

ExprPtr ExpressionParser::parse_filter_expr(ExprPtr e) {
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

ExprPtr ExpressionParser::parse_subscript(ExprPtr target) {
  const Token& t = tokens_[pos_++];
  if (t.text == ".") {
    if (cur().type == T::Name) {
      auto e = node(Expr::Kind::Attr, t.line);
      e->name = tokens_[pos_++].text;
      e->args.push_back(std::move(target));
      return e;
    }
    if (cur().type != T::Int) error("expected a name or number after '.', got " + describe(cur()));
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
void ExpressionParser::parse_call_args(Expr& e) {
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

ExprPtr ExpressionParser::parse_call(ExprPtr callee) {
  auto e = node(Expr::Kind::Call, cur().line);
  e->args.push_back(std::move(callee));
  parse_call_args(*e);
  return e;
}

std::string ExpressionParser::dotted_name() {
  std::string name = expect_name();
  while (is_op(".") && peek().type == T::Name) {
    pos_ += 1;
    name += "." + expect_name();
  }
  return name;
}

ExprPtr ExpressionParser::parse_filters(ExprPtr operand, bool start_inline) {
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

ExprPtr ExpressionParser::parse_test(ExprPtr operand) {
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

}  // namespace unitrain::jinja
