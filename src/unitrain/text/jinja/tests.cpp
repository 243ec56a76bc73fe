// Jinja2's tests that chat templates use (jinja2/tests.py): `x is defined`, `x is equalto y`, ...
#include <functional>
#include <map>

#include "unitrain/text/jinja/builtins.h"
#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {
namespace {

using Test = std::function<bool(const Value&, Args&)>;

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> table = [] {
    std::map<std::string, Test> t;
    auto unary = [](bool (*fn)(const Value&)) {
      return [fn](const Value& v, Args& args) {
        bind_args("test", args, {});
        return fn(v);
      };
    };
    auto binary = [](bool (*fn)(const Value&, const Value&)) {
      return [fn](const Value& v, Args& args) {
        return fn(v, bind_args("test", args, {{"other", std::nullopt}})[0]);
      };
    };
    t["defined"] = unary([](const Value& v) { return !v.is_undefined(); });
    t["undefined"] = unary([](const Value& v) { return v.is_undefined(); });
    t["none"] = unary([](const Value& v) { return v.is(Value::Kind::None); });
    t["boolean"] = unary([](const Value& v) { return v.is(Value::Kind::Bool); });
    t["true"] = unary([](const Value& v) { return v.is(Value::Kind::Bool) && v.boolean; });
    t["false"] = unary([](const Value& v) { return v.is(Value::Kind::Bool) && !v.boolean; });
    t["integer"] = unary([](const Value& v) { return v.is(Value::Kind::Int); });
    t["float"] = unary([](const Value& v) { return v.is(Value::Kind::Float); });
    t["number"] = unary([](const Value& v) { return v.is_number(); });
    t["string"] = unary([](const Value& v) { return v.is_string(); });
    t["mapping"] = unary([](const Value& v) { return v.is_mapping(); });
    t["iterable"] = unary([](const Value& v) {
      return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_mapping();
    });
    t["sequence"] = unary([](const Value& v) {
      return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_mapping();
    });
    t["callable"] = unary([](const Value& v) { return v.is(Value::Kind::Callable); });
    t["escaped"] = unary([](const Value&) { return false; });
    t["odd"] = unary([](const Value& v) { return to_int(v, "odd") % 2 != 0; });
    t["even"] = unary([](const Value& v) { return to_int(v, "even") % 2 == 0; });
    t["lower"] = unary([](const Value& v) { return py::lower(str(v)) == str(v); });
    t["upper"] = unary([](const Value& v) { return py::upper(str(v)) == str(v); });
    t["divisibleby"] = binary([](const Value& v, const Value& n) {
      const int64_t d = to_int(n, "divisibleby");
      if (d == 0) fail("ZeroDivisionError", "integer division or modulo by zero");
      return to_int(v, "divisibleby") % d == 0;
    });
    t["eq"] = t["equalto"] = t["=="] =
        binary([](const Value& a, const Value& b) { return equal(a, b); });
    t["ne"] = t["!="] = binary([](const Value& a, const Value& b) { return !equal(a, b); });
    t["lt"] = t["lessthan"] = t["<"] =
        binary([](const Value& a, const Value& b) { return compare(a, "<", b); });
    t["le"] = t["<="] = binary([](const Value& a, const Value& b) { return compare(a, "<=", b); });
    t["gt"] = t["greaterthan"] = t[">"] =
        binary([](const Value& a, const Value& b) { return compare(a, ">", b); });
    t["ge"] = t[">="] = binary([](const Value& a, const Value& b) { return compare(a, ">=", b); });
    t["in"] = binary([](const Value& a, const Value& b) { return contains(b, a); });
    t["sameas"] = binary([](const Value& a, const Value& b) {
      if (a.kind != b.kind) return false;
      switch (a.kind) {
        case Value::Kind::None:
        case Value::Kind::Undefined:
          return true;
        case Value::Kind::Bool:
          return a.boolean == b.boolean;
        case Value::Kind::List:
        case Value::Kind::Tuple:
          return a.list == b.list;
        case Value::Kind::Dict:
        case Value::Kind::Namespace:
          return a.dict == b.dict;
        case Value::Kind::Int:  // small ints and equal literals are one object in CPython
        case Value::Kind::Float:
        case Value::Kind::String:
          return equal(a, b);
        default:
          return false;
      }
    });
    t["filter"] = unary([](const Value& v) { return v.is_string() && is_filter(v.text); });
    t["test"] = unary([](const Value& v) { return v.is_string() && tests().count(v.text) > 0; });
    return t;
  }();
  return table;
}

}  // namespace

bool apply_test(const std::string& name, const Value& operand, Args& args) {
  const auto& table = tests();
  const auto it = table.find(name);
  if (it == table.end()) fail("TemplateRuntimeError", "No test named '" + name + "'.");
  return it->second(operand, args);
}

}  // namespace unitrain::jinja
