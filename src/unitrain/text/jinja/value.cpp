#include "unitrain/text/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {

JinjaError::JinjaError(std::string type, int line, std::string message, const std::string& what)
    : ConfigError(what + (line > 0 ? ", line " + std::to_string(line) : std::string()) + ": " +
                  (type == "TemplateError" ? "the template raised: " : type + ": ") + message),
      type_(std::move(type)),
      line_(line),
      message_(std::move(message)) {}

void fail(std::string type, std::string message) {
  throw EvalError{std::move(type), std::move(message)};
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::from(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.boolean = b;
  return v;
}
Value Value::from(int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.integer = i;
  return v;
}
Value Value::from(double d) {
  Value v;
  v.kind = Kind::Float;
  v.real = d;
  return v;
}
Value Value::from(std::string s) {
  Value v;
  v.kind = Kind::String;
  v.text = std::move(s);
  return v;
}
Value Value::from(List items, Kind kind) {
  Value v;
  v.kind = kind;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::from(Dict d, Kind kind) {
  Value v;
  v.kind = kind;
  v.dict = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::function_of(std::string name, std::function<Value(Args&)> call) {
  Value v;
  v.kind = Kind::Callable;
  v.function = std::make_shared<Callable>(Callable{std::move(name), std::move(call)});
  return v;
}
Value Value::undefined(std::string hint) {
  Value v;
  v.text = std::move(hint);
  return v;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return boolean;
    case Kind::Int:
      return integer != 0;
    case Kind::Float:
      return real != 0;
    case Kind::String:
      return !text.empty();
    case Kind::List:
    case Kind::Tuple:
      return !list->empty();
    case Kind::Dict:
      return !dict->items.empty();
    default:
      return true;
  }
}

double Value::as_double() const {
  return kind == Kind::Float  ? real
         : kind == Kind::Bool ? (boolean ? 1.0 : 0.0)
                              : static_cast<double>(integer);
}

std::string Value::type_name() const {
  switch (kind) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
    case Kind::Namespace:
      return "Namespace";
    case Kind::Loop:
      return "LoopContext";
    default:
      return "function";
  }
}

const Value& Value::defined() const {
  if (kind == Kind::Undefined) fail(unsafe ? "SecurityError" : "UndefinedError", text);
  return *this;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  int precision = 1;
  for (; precision < 17; ++precision) {  // the shortest that reads back
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
  const std::string sci = buf;
  const size_t e = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (std::isdigit(static_cast<unsigned char>(sci[i]))) digits += sci[i];
  }
  const std::string sign = d < 0 ? "-" : "";
  if (exponent < -4 || exponent >= 16) {  // Python's repr switches to an exponent
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return sign + "0." + std::string(-exponent - 1, '0') + digits;
  const size_t whole = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= whole) return sign + digits + std::string(whole - digits.size(), '0') + ".0";
  return sign + digits.substr(0, whole) + "." + digits.substr(whole);
}

namespace {

std::string string_repr(const std::string& s) {
  const bool double_quote = s.find('\'') != s.npos && s.find('"') == s.npos;
  const char quote = double_quote ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : py::decode(s)) {
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!py::is_printable(c)) {
      std::snprintf(buf, sizeof buf,
                    c < 0x100     ? "\\x%02x"
                    : c < 0x10000 ? "\\u%04x"
                                  : "\\U%08x",
                    static_cast<unsigned>(c));
      out += buf;
    } else {
      out += py::encode(std::u32string(1, c));
    }
  }
  return out + quote;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return v.boolean ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(v.integer);
    case Value::Kind::Float:
      return float_repr(v.real);
    case Value::Kind::String:
      return string_repr(v.text);
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      if (v.text.rfind("range(", 0) == 0) return v.text;
      const bool tuple = v.kind == Value::Kind::Tuple;
      if (!v.text.empty()) {  // a dict view
        Value items = v;
        items.text.clear();
        return v.text + "(" + repr(items) + ")";
      }
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) out += (i ? ", " : "") + repr((*v.list)[i]);
      if (tuple && v.list->size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      for (size_t i = 0; i < v.dict->items.size(); ++i) {
        const auto& [k, item] = v.dict->items[i];
        out += (i ? ", " : "") + string_repr(k) + ": " + repr(item);
      }
      return out + "}";
    }
    case Value::Kind::Namespace: {
      std::string out = "<Namespace {";
      for (size_t i = 0; i < v.dict->items.size(); ++i) {
        const auto& [k, item] = v.dict->items[i];
        out += (i ? ", " : "") + string_repr(k) + ": " + repr(item);
      }
      return out + "}>";
    }
    case Value::Kind::Loop:
      return "<LoopContext>";
    default:
      return "<function " + v.function->name + ">";
  }
}

std::string str(const Value& v) {
  if (v.kind == Value::Kind::Undefined) return "";
  return v.kind == Value::Kind::String ? v.text : repr(v);
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) {
      return (a.kind == Value::Kind::Bool ? a.boolean : a.integer) ==
             (b.kind == Value::Kind::Bool ? b.boolean : b.integer);
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.text == b.text;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      return a.list->size() == b.list->size() &&
             std::equal(a.list->begin(), a.list->end(), b.list->begin(), equal);
    case Value::Kind::Dict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    default:
      return a.dict == b.dict && a.function == b.function;
  }
}

bool compare(const Value& a, const std::string& op, const Value& b) {
  int c = 0;
  if (a.is_number() && b.is_number()) {
    const double x = a.as_double(), y = b.as_double();
    if (std::isnan(x) || std::isnan(y)) return false;
    c = x < y ? -1 : x > y ? 1 : 0;
  } else if (a.is_string() && b.is_string()) {
    c = a.text.compare(b.text);  // UTF-8's byte order is the code points' order
  } else if (a.is_sequence() && a.kind == b.kind) {
    size_t i = 0;
    while (i < a.list->size() && i < b.list->size() && equal((*a.list)[i], (*b.list)[i])) ++i;
    if (i < a.list->size() && i < b.list->size()) return compare((*a.list)[i], op, (*b.list)[i]);
    c = a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  } else {
    a.defined(), b.defined();
    fail("TypeError", "'" + op + "' not supported between instances of '" + a.type_name() +
                          "' and '" + b.type_name() + "'");
  }
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::Undefined:
      if (container.unsafe) container.defined();
      return false;  // Undefined iterates as empty
    case Value::Kind::String:
      if (!item.is_string()) {
        fail("TypeError", "'in <string>' requires string as left operand, not " + item.type_name());
      }
      return container.text.find(item.text) != std::string::npos;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      return std::any_of(container.list->begin(), container.list->end(),
                         [&](const Value& v) { return equal(v, item); });
    case Value::Kind::Dict:
      return item.is_string() && container.dict->find(item.text) != nullptr;
    default:
      fail("TypeError", "argument of type '" + container.type_name() + "' is not iterable");
  }
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
      if (v.unsafe) v.defined();
      return {};
    case Value::Kind::String: {
      List out;
      for (char32_t c : py::decode(v.text)) out.push_back(Value::from(py::encode({c})));
      return out;
    }
    case Value::Kind::List:
    case Value::Kind::Tuple:
      return *v.list;
    case Value::Kind::Dict: {
      List out;
      for (const auto& item : v.dict->items) out.push_back(Value::from(item.first));
      return out;
    }
    default:
      fail("TypeError", "'" + v.type_name() + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return py::length(v.text);
    case Value::Kind::List:
    case Value::Kind::Tuple:
      return static_cast<int64_t>(v.list->size());
    case Value::Kind::Dict:
      return static_cast<int64_t>(v.dict->items.size());
    default:
      fail("TypeError", "object of type '" + v.type_name() + "' has no len()");
  }
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::from(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::from(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::from(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value::from(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::from(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& item : j) items.push_back(from_json(item));
      return Value::from(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, item] : j.items()) d.items.emplace_back(k, from_json(item));
      return Value::from(std::move(d));
    }
    default:
      return Value::none();
  }
}

}  // namespace unitrain::jinja
