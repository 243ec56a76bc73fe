#pragma once
// The values a chat template computes with, as Python's Jinja2 sees them: None, bools, ints,
// floats, strings, lists, tuples, dicts (in insertion order), namespaces, callables, and
// Jinja's Undefined. Printing, truth, equality and order follow Python's rules.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "unitrain/core/error.h"

namespace unitrain::jinja {

/// A template that cannot run, or one that stopped: the message names the template (`what`),
/// its line and the cause, as Jinja2's exception would (`type` is its class: TemplateError for
/// raise_exception, UndefinedError, SecurityError, TypeError, TemplateSyntaxError,
/// Unsupported for Jinja that unitrain does not run).
class JinjaError : public ConfigError {
 public:
  JinjaError(std::string type, int line, std::string message, const std::string& what);
  const std::string& type() const { return type_; }
  int line() const { return line_; }
  /// The message without the template's name and line (raise_exception's text as written).
  const std::string& message() const { return message_; }

 private:
  std::string type_;
  int line_;
  std::string message_;
};

/// Raised while reading or evaluating, without the template's name: the renderer adds it, and
/// the line when `line` is 0.
struct EvalError {
  std::string type, message;
  int line = 0;
};
[[noreturn]] void fail(std::string type, std::string message);

struct Value;
using List = std::vector<Value>;
/// A dict's items in insertion order (Python's dict), or a namespace's attributes.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};
/// A call's arguments: positional, then keyword (in the order written).
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};
struct Callable {
  std::string name;
  std::function<Value(Args&)> call;
};

struct Value {
  enum class Kind {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,
    Dict,
    Namespace,
    Loop,
    Callable
  };
  Kind kind = Kind::Undefined;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  /// A string; for Undefined, what was looked up (for the error); for a list that Python
  /// prints otherwise, how: "range(0, 3)", or the view's type ("dict_keys") around the items.
  std::string text;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Callable> function;
  bool unsafe = false;  ///< Undefined from a sandbox refusal: using it is a SecurityError
  bool markup = false;  ///< a string the escape filter made (Markup: + escapes the other side)

  Value() = default;
  static Value none();
  static Value from(bool b);
  static Value from(int64_t i);
  static Value from(double d);
  static Value from(std::string s);
  static Value from(List items, Kind kind = Kind::List);
  static Value from(Dict d, Kind kind = Kind::Dict);
  static Value function_of(std::string name, std::function<Value(Args&)> call);
  /// Undefined, remembering `hint` ("'x' is undefined", "'dict object' has no attribute 'x'").
  static Value undefined(std::string hint);

  bool is(Kind k) const { return kind == k; }
  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_sequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  bool is_mapping() const { return kind == Kind::Dict; }
  /// Python's truth (Undefined is false).
  bool truthy() const;
  /// A number as a double (bool and int widen).
  double as_double() const;
  /// Python's type name ("str", "int", "dict", "Undefined") for messages.
  std::string type_name() const;
  /// Fails (UndefinedError or SecurityError) when this is Undefined: before it is used in a way
  /// Python's Undefined refuses (an attribute, an item, arithmetic, a call).
  const Value& defined() const;
};

/// Python's str(): what `{{ value }}` prints (None, True, a list's repr, "" for Undefined).
std::string str(const Value& v);
/// Python's repr().
std::string repr(const Value& v);
/// Python's repr of a float: the shortest text that reads back as the same double.
std::string float_repr(double d);
/// Python's ==.
bool equal(const Value& a, const Value& b);
/// Python's <, <=, >, >= (`op`); TypeError for values Python does not order.
bool compare(const Value& a, const std::string& op, const Value& b);
/// Python's `a in b`.
bool contains(const Value& container, const Value& item);
/// The items `for` goes through: a list's or tuple's, a dict's keys, a string's characters;
/// none for Undefined; TypeError for what Python cannot iterate.
List iterate(const Value& v);
/// Python's len(); TypeError where Python has none.
int64_t length(const Value& v);

/// A JSON document's value (objects keep their order).
Value from_json(const nlohmann::ordered_json& j);
/// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter
/// calls it; TypeError for Undefined, callables and namespaces (not JSON serializable).
struct JsonStyle {
  bool ensure_ascii = false;
  int indent = -1;                            ///< -1: one line
  std::string indent_text;                    ///< an indent given as text
  std::string item_separator, key_separator;  ///< "" = json.dumps's defaults
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace unitrain::jinja
