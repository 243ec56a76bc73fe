// Attribute and item lookup as the sandbox does it, and the methods of dict and list that a
// template may call (those that change a list or dict are refused, as the immutable sandbox
// does); str's are in str_methods.cpp.
#include <algorithm>
#include <set>

#include "unitrain/text/jinja/builtins.h"
#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {
namespace {

Value unsafe(const Value& obj, const std::string& name) {
  Value v = Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() +
                             "' object is unsafe.");
  v.unsafe = true;
  return v;
}

std::optional<Value> dict_method(const Value& self, const std::string& name, const Args& args) {
  const Dict& d = *self.dict;
  if (name == "items" || name == "keys" || name == "values") {
    bind_args(name, args, {});
    Value view = Value::from(List{});
    view.text = "dict_" + name;  // printed as Python prints a view
    List& out = *view.list;
    for (const auto& [k, v] : d.items) {
      if (name == "items") {
        out.push_back(Value::from(List{Value::from(k), v}, Value::Kind::Tuple));
      } else {
        out.push_back(name == "keys" ? Value::from(k) : v);
      }
    }
    return view;
  }
  if (name == "get") {
    const auto a = bind_args(name, args, {{"key", std::nullopt}, {"default", Value::none()}});
    const Value* found = a[0].is_string() ? d.find(a[0].text) : nullptr;
    return found ? *found : a[1];
  }
  if (name == "copy") return bind_args(name, args, {}), Value::from(Dict(d));
  return std::nullopt;
}

std::optional<Value> list_method(const Value& self, const std::string& name, const Args& args) {
  const List& l = *self.list;
  if (name == "index" || name == "count") {
    const auto a = bind_args(name, args, {{"value", std::nullopt}});
    int64_t n = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!equal(l[i], a[0])) continue;
      if (name == "index") return Value::from(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") fail("ValueError", repr(a[0]) + " is not in list");
    return Value::from(n);
  }
  if (name == "copy" && self.kind == Value::Kind::List)
    return bind_args(name, args, {}), Value::from(List(l));
  if (name == "pop" && self.kind == Value::Kind::List) {  // the immutable sandbox allows it
    const auto a = bind_args(name, args, {{"index", Value::from(int64_t{-1})}});
    int64_t i = to_int(a[0], "index");
    const int64_t n = static_cast<int64_t>(l.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) fail("IndexError", n ? "pop index out of range" : "pop from empty list");
    Value out = l[static_cast<size_t>(i)];
    self.list->erase(self.list->begin() + i);
    return out;
  }
  if (name == "clear" && self.kind == Value::Kind::List) {
    bind_args(name, args, {});
    self.list->clear();
    return Value::none();
  }
  return std::nullopt;
}

bool changes_its_value(const Value& obj, const std::string& name) {
  static const std::set<std::string> list = {"append", "extend",  "insert",
                                             "remove", "reverse", "sort"};
  static const std::set<std::string> dict = {"clear", "pop", "popitem", "setdefault", "update"};
  return (obj.kind == Value::Kind::List && list.count(name)) ||
         (obj.kind == Value::Kind::Dict && dict.count(name));
}

/// The attribute `name` of `obj` as Python's getattr finds it: a bound method, a namespace's
/// or loop's attribute; nullopt when there is none.
std::optional<Value> attribute(const Value& obj, const std::string& name) {
  if (obj.kind == Value::Kind::Namespace || obj.kind == Value::Kind::Loop) {
    const Value* v = obj.dict->find(name);
    return v ? std::optional<Value>(*v) : std::nullopt;
  }
  if (changes_its_value(obj, name)) return unsafe(obj, name);
  using Method = std::optional<Value> (*)(const Value&, const std::string&, const Args&);
  Method method = obj.is_string()     ? string_method
                  : obj.is_mapping()  ? dict_method
                  : obj.is_sequence() ? list_method
                                      : nullptr;
  if (!method) return std::nullopt;
  static const std::set<std::string> str_names = {
      "strip",      "lstrip",    "rstrip",      "split",        "rsplit",       "startswith",
      "endswith",   "replace",   "upper",       "lower",        "casefold",     "title",
      "capitalize", "swapcase",  "find",        "rfind",        "index",        "rindex",
      "count",      "join",      "splitlines",  "removeprefix", "removesuffix", "isdigit",
      "isdecimal",  "isnumeric", "isalpha",     "isalnum",      "isspace",      "islower",
      "isupper",    "isascii",   "isprintable", "istitle",      "center",       "ljust",
      "rjust",      "zfill",     "partition",   "rpartition",   "format"};
  static const std::set<std::string> str_others = {"encode",       "expandtabs", "format_map",
                                                   "isidentifier", "maketrans",  "translate"};
  static const std::set<std::string> dict_names = {"items", "keys", "values",
                                                   "get",   "copy", "fromkeys"};
  static const std::set<std::string> list_names = {"index", "count", "copy", "pop", "clear"};
  const std::set<std::string>& names = obj.is_string()    ? str_names
                                       : obj.is_mapping() ? dict_names
                                                          : list_names;
  if (!names.count(name)) {
    if (obj.is_string() && str_others.count(name)) {
      return Value::function_of(name, [name](Args&) -> Value {
        fail("Unsupported", "str." + name + "() is Python that unitrain's Jinja does not run");
      });
    }
    return std::nullopt;
  }
  const Value self = obj;
  return Value::function_of(name, [self, name, method](Args& args) -> Value {
    std::optional<Value> out = method(self, name, args);
    if (!out)
      fail("Unsupported",
           self.type_name() + "." + name + "() is Python that unitrain's Jinja does not run");
    return *out;
  });
}

std::string owner(const Value& obj) {
  return obj.is_string()     ? "str object"
         : obj.is_mapping()  ? "dict object"
         : obj.is_sequence() ? obj.type_name() + " object"
                             : obj.type_name() + " object";
}

}  // namespace

std::optional<Value> attribute_of(const Value& obj, const std::string& name) {
  obj.defined();
  if (name.rfind("_", 0) == 0) return unsafe(obj, name);  // Python's dunders: the sandbox refuses
  return attribute(obj, name);
}

Value get_attr(const Value& obj, const std::string& name) {
  if (std::optional<Value> a = attribute_of(obj, name)) return *a;
  if (obj.is_mapping()) {
    if (const Value* v = obj.dict->find(name)) return *v;
  }
  return Value::undefined("'" + owner(obj) + "' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  obj.defined();
  if (obj.is_mapping() && key.is_string()) {
    if (const Value* v = obj.dict->find(key.text)) return *v;
  } else if ((obj.is_sequence() || obj.is_string()) &&
             (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
    const int64_t n = length(obj);
    int64_t i = key.kind == Value::Kind::Bool ? key.boolean : key.integer;
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_sequence()) return (*obj.list)[static_cast<size_t>(i)];
      return Value::from(py::slice(obj.text, true, i, true, i + 1, 1));
    }
  }
  if (key.is_string() && key.text.rfind("_", 0) != 0) {
    if (std::optional<Value> a = attribute(obj, key.text)) return *a;
  }
  const std::string what = key.is_string() ? "'" + key.text + "'" : repr(key);
  return Value::undefined("'" + owner(obj) + "' has no attribute " + what);
}

std::vector<Value> bind_args(const std::string& function, const Args& args,
                             const std::vector<Param>& params) {
  if (args.positional.size() > params.size()) {
    fail("TypeError", function + "() takes at most " + std::to_string(params.size()) +
                          " argument(s) (" + std::to_string(args.positional.size()) + " given)");
  }
  std::vector<std::optional<Value>> bound(params.size());
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (const auto& [key, value] : args.keywords) {
    auto it =
        std::find_if(params.begin(), params.end(), [&](const Param& p) { return key == p.name; });
    if (it == params.end())
      fail("TypeError", function + "() got an unexpected keyword argument '" + key + "'");
    auto& slot = bound[static_cast<size_t>(it - params.begin())];
    if (slot) fail("TypeError", function + "() got multiple values for argument '" + key + "'");
    slot = value;
  }
  std::vector<Value> out;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!bound[i] && !params[i].fallback) {
      fail("TypeError", function + "() missing required argument '" + params[i].name + "'");
    }
    out.push_back(bound[i] ? *bound[i] : *params[i].fallback);
  }
  return out;
}

int64_t bounded_size(const Value& v, const std::string& what) {
  const int64_t n = to_int(v, what);
  if (n > (int64_t{1} << 24))
    fail("LimitExceeded", what + " " + std::to_string(n) + " is past 16,777,216");
  return n;
}

int64_t bounded_size(const std::string& digits, const std::string& what) {
  if (digits.size() > 8) fail("LimitExceeded", what + " " + digits + " is past 16,777,216");
  return digits.empty() ? 0 : std::stoll(digits);
}

int64_t to_int(const Value& v, const std::string& what) {
  if (v.kind == Value::Kind::Int) return v.integer;
  if (v.kind == Value::Kind::Bool) return v.boolean;
  v.defined();
  fail("TypeError", what + ": '" + v.type_name() + "' object cannot be interpreted as an integer");
}

}  // namespace unitrain::jinja
