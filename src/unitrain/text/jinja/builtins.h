#pragma once
// What a template reaches besides its own code, as Jinja2's ImmutableSandboxedEnvironment gives
// it: attribute and item lookup (methods of str, dict and list included; those that change a
// value refused), the filters and tests, and how a call's arguments bind to a parameter list.
#include <optional>
#include <string>
#include <vector>

#include "unitrain/text/jinja/value.h"

namespace unitrain::jinja {

/// Python's getattr alone (the attr filter): a method, a namespace's attribute; nullopt else.
std::optional<Value> attribute_of(const Value& obj, const std::string& name);
/// str's method `name` called on `self` with `args`; nullopt when it is none unitrain runs.
std::optional<Value> string_method(const Value& self, const std::string& name, const Args& args);
/// `obj.name`: an attribute (a method) first, then an item; Undefined when neither.
Value get_attr(const Value& obj, const std::string& name);
/// `obj[key]`: an item first, then (for a string key) an attribute; Undefined when neither.
Value get_item(const Value& obj, const Value& key);

/// A parameter of a filter, test, method or global: its name and its default (none: required).
struct Param {
  const char* name;
  std::optional<Value> fallback;
};
/// `args` bound to `params` in order (keywords by name, defaults filled); TypeError naming
/// `function` for too many arguments, an unknown keyword or a required one missing.
std::vector<Value> bind_args(const std::string& function, const Args& args,
                             const std::vector<Param>& params);

/// Calls filter `name` on `operand`. Unsupported for a filter of Jinja2 that unitrain does not
/// run, TemplateRuntimeError for a name Jinja2 has no filter by.
Value apply_filter(const std::string& name, const Value& operand, Args& args);
/// Whether Jinja2's filter `name` is one unitrain runs (the `filter` test).
bool is_filter(const std::string& name);
/// Calls test `name` (`x is name(args)`).
bool apply_test(const std::string& name, const Value& operand, Args& args);

/// Python's printf-style `text % args` (the format filter): `args` positional, or keywords
/// for %(name)s.
std::string percent_format(const std::string& text, const Args& args);
/// Python's str.format(*args, **kwargs) with its format-spec mini-language.
Value str_format(const std::string& text, const Args& args);

/// A width, count or length a template asks a string or list to grow to: to_int(v), LimitExceeded
/// past 16,777,216 (a template's output is bounded; its intermediate values so too).
int64_t bounded_size(const Value& v, const std::string& what);
/// The same for one written in a format spec (its digits).
int64_t bounded_size(const std::string& digits, const std::string& what);

/// `a op b` for Python's + - * / // % ** (TypeError, ZeroDivisionError, OverflowError as it).
Value arithmetic(const std::string& op, const Value& a, const Value& b);

/// The integer of `v` as int() reads it (an int, a bool, a float truncated); TypeError else.
int64_t to_int(const Value& v, const std::string& what);

}  // namespace unitrain::jinja
