#pragma once
// A parsed template: expressions and statements as Jinja2's parser builds them.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "unitrain/text/jinja/value.h"

namespace unitrain::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  ///< `value`
    Name,     ///< `name`
    List,
    Tuple,   ///< `args`: the items
    Dict,    ///< `args`: key, value, key, value, ...
    Attr,    ///< args[0].`name`
    Item,    ///< args[0][args[1]]
    Slice,   ///< args[0][args[1]:args[2]:args[3]] (null where omitted)
    Call,    ///< args[0](args[1...], keywords)
    Filter,  ///< args[0] | `name`(args[1...], keywords); args[0] null in {% filter %}
    Test,    ///< args[0] is [not] `name`(args[1...], keywords)
    Neg,
    Pos,
    Not,      ///< of args[0]
    Binary,   ///< args[0] `name` args[1]: + - * / // % **
    Concat,   ///< args joined by ~
    Compare,  ///< args[0] ops[0] args[1] ops[1] args[2] ...
    And,
    Or,    ///< args[0], args[1]
    Cond,  ///< args[0] if args[1] else args[2] (null: no else)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;
  bool negated = false;  ///< `is not`
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    Text,         ///< `text`
    Print,        ///< {{ expr }}
    If,           ///< if expr: body else: else_body (an elif is an If alone in else_body)
    For,          ///< for targets in expr [if filter]: body else: else_body
    Set,          ///< set targets = expr, or set targets[0].attr = expr (`attr` not empty)
    SetBlock,     ///< set targets[0] [| filter] %} body {% endset
    Macro,        ///< macro `name`(params) body
    FilterBlock,  ///< filter `filter` body
    With,         ///< with params (name = expr): body
    Break,
    Continue,
    Generation,  ///< generation: body (the assistant's text, transformers' AssistantTracker)
  };
  Kind kind;
  int line = 0;
  std::string text, name, attr;
  ExprPtr expr, filter;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, ExprPtr>> params;
  Body body, else_body;
};

/// The statements of a template's tokens. EvalError (TemplateSyntaxError, or Unsupported for
/// Jinja that unitrain does not run: include, extends, import, call blocks, recursive loops, ...)
/// with the line.
Body parse(const std::string& source);

}  // namespace unitrain::jinja
