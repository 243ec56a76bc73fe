#pragma once
// Jinja2's expressions (jinja2/parser.py), private to text/jinja/: their precedence from loosest to
// tightest: conditional expression, or, and, not, comparisons and `in`, + -, ~, * / // %, **,
// unary - +, then a primary with its postfixes (.attr, [item], (call)) and its filters and tests.
#include <set>
#include <string>
#include <vector>

#include "unitrain/text/jinja/token_cursor.h"

namespace unitrain::jinja {

/// Parses expressions from the token stream; the statement parser builds on it.
class ExpressionParser : public TokenCursor {
 public:
  using TokenCursor::TokenCursor;

 protected:
  /// Expressions separated by commas: a tuple when there is a comma, else the one expression.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parentheses,
                      const std::set<std::string>& extra_ends = {});
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_filters(ExprPtr operand, bool start_inline);

 private:
  bool tuple_ends(const std::set<std::string>& extra_ends) const;
  ExprPtr parse_condexpr();
  ExprPtr binary(Expr::Kind kind, ExprPtr a, ExprPtr b, const std::string& op, int line);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr literal(Value v, int line);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr e);
  ExprPtr parse_filter_expr(ExprPtr e);
  ExprPtr parse_subscript(ExprPtr target);
  /// `(` positional, name=keyword `)` into `e` (its args after what it already holds).
  void parse_call_args(Expr& e);
  ExprPtr parse_call(ExprPtr callee);
  std::string dotted_name();
  ExprPtr parse_test(ExprPtr operand);
};

}  // namespace unitrain::jinja
