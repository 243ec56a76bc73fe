// Python's binary operators on template values: + - * / // % ** with Python's int and float
// rules (ints are int64 here: past it, OverflowError), sequence concatenation and repetition,
// Markup's escaping +, and str % args.
#include <algorithm>
#include <climits>
#include <cmath>

#include "unitrain/text/jinja/builtins.h"

namespace unitrain::jinja {
namespace {

[[noreturn]] void overflow() {
  fail("OverflowError", "an integer beyond 64 bits (unitrain's Jinja keeps int64)");
}

/// x op y on int64, OverflowError past its range.
int64_t int_op(char op, int64_t x, int64_t y) {
  int64_t r = 0;
  const bool over = op == '+'   ? __builtin_add_overflow(x, y, &r)
                    : op == '-' ? __builtin_sub_overflow(x, y, &r)
                                : __builtin_mul_overflow(x, y, &r);
  if (over) overflow();
  return r;
}

}  // namespace

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  a.defined();
  b.defined();
  if (a.is_number() && b.is_number()) {
    const bool ints = a.kind != Value::Kind::Float && b.kind != Value::Kind::Float;
    const int64_t x = ints ? to_int(a, op) : 0, y = ints ? to_int(b, op) : 0;
    const double p = a.as_double(), q = b.as_double();
    if (op == "+") return ints ? Value::from(int_op('+', x, y)) : Value::from(p + q);
    if (op == "-") return ints ? Value::from(int_op('-', x, y)) : Value::from(p - q);
    if (op == "*") return ints ? Value::from(int_op('*', x, y)) : Value::from(p * q);
    if (op == "/") {
      if (q == 0) fail("ZeroDivisionError", "division by zero");
      return Value::from(p / q);
    }
    if (op == "//" || op == "%") {
      if (q == 0)
        fail("ZeroDivisionError", ints ? "integer division or modulo by zero" : "float modulo");
      if (ints) {
        if (x == INT64_MIN && y == -1) overflow();
        int64_t quotient = x / y, rest = x % y;
        if (rest != 0 && ((rest < 0) != (y < 0))) --quotient, rest += y;
        return Value::from(op == "//" ? quotient : rest);
      }
      const double rest = std::fmod(p, q);
      const double mod = rest != 0 && ((rest < 0) != (q < 0)) ? rest + q : rest;
      return Value::from(op == "//" ? std::floor((p - mod) / q + 0.5) : mod);
    }
    if (op == "**") {
      if (ints && y >= 0) {
        int64_t out = 1;
        for (int64_t i = 0; i < y; ++i) {
          out = int_op('*', out, x);
          if (out == 0 || out == 1) break;
        }
        return Value::from(out);
      }
      return Value::from(std::pow(p, q));
    }
  }
  if (op == "+" && a.kind == b.kind && a.is_string()) {
    if (a.markup == b.markup) {
      Value out = Value::from(a.text + b.text);
      out.markup = a.markup;
      return out;
    }
    Args none;  // Markup + str escapes the str (Markup's __add__)
    Value out = Value::from((a.markup ? a.text : str(apply_filter("escape", a, none))) +
                            (b.markup ? b.text : str(apply_filter("escape", b, none))));
    out.markup = true;
    return out;
  }
  if (op == "+" && a.kind == b.kind && a.is_sequence()) {
    List items = *a.list;
    items.insert(items.end(), b.list->begin(), b.list->end());
    return Value::from(std::move(items), a.kind);
  }
  if (op == "*" && (a.is_string() || a.is_sequence() || b.is_string() || b.is_sequence()) &&
      (a.kind == Value::Kind::Int || b.kind == Value::Kind::Int)) {
    const Value& seq = a.kind == Value::Kind::Int ? b : a;
    const int64_t n = std::max<int64_t>(to_int(a.kind == Value::Kind::Int ? a : b, "*"), 0);
    const int64_t size = seq.is_string() ? static_cast<int64_t>(seq.text.size()) : length(seq);
    if (size > 0 && n > (int64_t{64} << 20) / size)
      fail("LimitExceeded", "a repetition past 64 MiB");
    if (seq.is_string()) {
      std::string out;
      for (int64_t i = 0; i < n; ++i) out += seq.text;
      return Value::from(std::move(out));
    }
    List items;
    for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.list->begin(), seq.list->end());
    return Value::from(std::move(items), seq.kind);
  }
  if (op == "%" && a.is_string()) {
    Args args;
    if (b.is_mapping()) {
      args.keywords = b.dict->items;
    } else {
      args.positional = b.kind == Value::Kind::Tuple ? *b.list : List{b};
    }
    return Value::from(percent_format(a.text, args));
  }
  if (op == "+" && a.is_string()) {
    fail("TypeError", "can only concatenate str (not \"" + b.type_name() + "\") to str");
  }
  fail("TypeError", "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                        b.type_name() + "'");
}

}  // namespace unitrain::jinja
