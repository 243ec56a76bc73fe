// The methods of str a template may call (Python's, on code points): strip, split, replace,
// startswith, find, join, format, the is* predicates, ...
#include <algorithm>
#include <unordered_map>

#include "unitrain/text/jinja/builtins.h"
#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {
namespace {

std::string as_text(const Value& v, const std::string& what) {
  if (!v.is_string()) {
    fail("TypeError", what + " must be str, not " + v.type_name());
  }
  return v.text;
}

std::optional<std::u32string> strip_chars(const Value& v) {
  if (v.is(Value::Kind::None)) return std::nullopt;
  return py::decode(as_text(v, "strip arg"));
}

Value text_list(const std::vector<std::string>& parts) {
  List out;
  for (const auto& p : parts) out.push_back(Value::from(p));
  return Value::from(std::move(out));
}

bool starts_or_ends(const std::string& whole, const Value& affix, bool start,
                    const Value& from = Value::none(), const Value& to = Value::none()) {
  const bool has_from = !from.is(Value::Kind::None), has_to = !to.is(Value::Kind::None);
  const std::string s = has_from || has_to
                            ? py::slice(whole, has_from, has_from ? to_int(from, "start") : 0,
                                        has_to, has_to ? to_int(to, "end") : 0, 1)
                            : whole;
  auto one = [&](const std::string& a) {
    return a.size() <= s.size() && (start ? s.compare(0, a.size(), a) == 0
                                          : s.compare(s.size() - a.size(), a.size(), a) == 0);
  };
  if (affix.kind == Value::Kind::Tuple) {
    return std::any_of(affix.list->begin(), affix.list->end(),
                       [&](const Value& a) { return one(as_text(a, "a tuple's item")); });
  }
  return one(as_text(affix, start ? "startswith arg" : "endswith arg"));
}

template <typename Pred>
Value all_chars(const std::string& s, Pred pred) {
  const std::u32string u = py::decode(s);
  return Value::from(!u.empty() && std::all_of(u.begin(), u.end(), pred));
}

/// One call of a str method: the string, the method's name and the arguments given.
struct StrCall {
  const std::string& s;
  const std::string& name;
  const Args& args;
  std::vector<Value> bind(std::vector<Param> params) const { return bind_args(name, args, params); }
};

Value strip(const StrCall& c) {
  const auto chars = strip_chars(c.bind({{"chars", Value::none()}})[0]);
  return Value::from(
      py::strip(c.s, chars ? &*chars : nullptr, c.name != "rstrip", c.name != "lstrip"));
}

Value split(const StrCall& c) {
  const auto a = c.bind({{"sep", Value::none()}, {"maxsplit", Value::from(int64_t{-1})}});
  std::optional<std::string> sep;
  if (!a[0].is(Value::Kind::None)) sep = as_text(a[0], "sep");
  if (sep && sep->empty()) fail("ValueError", "empty separator");
  return text_list(
      py::split(c.s, sep ? &*sep : nullptr, to_int(a[1], "maxsplit"), c.name == "rsplit"));
}

Value starts_ends(const StrCall& c) {
  const auto a =
      c.bind({{"prefix", std::nullopt}, {"start", Value::none()}, {"end", Value::none()}});
  return Value::from(starts_or_ends(c.s, a[0], c.name == "startswith", a[1], a[2]));
}

Value replace(const StrCall& c) {
  const auto a =
      c.bind({{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::from(int64_t{-1})}});
  return Value::from(py::replace(c.s, as_text(a[0], "replace arg 1"),
                                 as_text(a[1], "replace arg 2"), to_int(a[2], "count")));
}

/// A method of no arguments that maps the string to a string.
template <std::string (*F)(std::string_view)>
Value mapped(const StrCall& c) {
  c.bind({});
  return Value::from(F(c.s));
}

Value find(const StrCall& c) {
  const auto a = c.bind({{"sub", std::nullopt}});
  const int64_t at = py::find(c.s, as_text(a[0], "must be str"), c.name[0] == 'r');
  if (at < 0 && c.name.find("index") != std::string::npos)
    fail("ValueError", "substring not found");
  return Value::from(at);
}

Value count(const StrCall& c) {
  return Value::from(py::count(c.s, as_text(c.bind({{"sub", std::nullopt}})[0], "must be str")));
}

Value join(const StrCall& c) {
  const auto a = c.bind({{"iterable", std::nullopt}});
  std::string out;
  bool first = true;
  for (const Value& item : iterate(a[0])) {
    if (!first) out += c.s;
    first = false;
    out += as_text(item, "sequence item");
  }
  return Value::from(std::move(out));
}

Value splitlines(const StrCall& c) {
  return text_list(py::splitlines(c.s, c.bind({{"keepends", Value::from(false)}})[0].truthy()));
}

Value remove_affix(const StrCall& c) {
  const std::string affix = as_text(c.bind({{"affix", std::nullopt}})[0], c.name + " arg");
  const bool prefix = c.name == "removeprefix";
  if (affix.empty() || !starts_or_ends(c.s, Value::from(affix), prefix)) return Value::from(c.s);
  return Value::from(prefix ? c.s.substr(affix.size()) : c.s.substr(0, c.s.size() - affix.size()));
}

/// A predicate true of a non-empty string whose every code point it holds for.
template <bool (*P)(char32_t)>
Value all_of(const StrCall& c) {
  c.bind({});
  return all_chars(c.s, P);
}

Value ascii(const StrCall& c) {
  c.bind({});
  return Value::from(std::all_of(c.s.begin(), c.s.end(), [](char ch) { return (ch & 0x80) == 0; }));
}

Value printable(const StrCall& c) {
  c.bind({});
  const std::u32string u = py::decode(c.s);
  return Value::from(std::all_of(u.begin(), u.end(), py::is_printable));
}

Value titled(const StrCall& c) {
  c.bind({});
  bool cased = false, previous_cased = false;
  for (char32_t ch : py::decode(c.s)) {
    const bool upper = py::is_upper(ch) || (py::is_alpha(ch) && !py::is_lower(ch) &&
                                            py::upper(py::encode({ch})) != py::encode({ch}));
    if (upper) {
      if (previous_cased) return Value::from(false);
      previous_cased = cased = true;
    } else if (py::is_lower(ch)) {
      if (!previous_cased) return Value::from(false);
      previous_cased = cased = true;
    } else {
      previous_cased = false;
    }
  }
  return Value::from(cased);
}

Value islower_isupper(const StrCall& c) {
  c.bind({});
  const bool lower = c.name == "islower";
  bool cased = false;
  for (char32_t ch : py::decode(c.s)) {
    if (lower ? py::is_upper(ch) : py::is_lower(ch)) return Value::from(false);
    cased |= lower ? py::is_lower(ch) : py::is_upper(ch);
  }
  return Value::from(cased);
}

Value justify(const StrCall& c) {
  const auto a = c.bind({{"width", std::nullopt}, {"fillchar", Value::from(std::string(" "))}});
  const int64_t n = py::length(c.s), width = bounded_size(a[0], "width");
  const std::string fill = as_text(a[1], "fillchar");
  if (py::length(fill) != 1)
    fail("TypeError", "The fill character must be exactly one character long");
  if (width <= n) return Value::from(c.s);
  const int64_t total = width - n;
  const int64_t left = c.name == "ljust"   ? 0
                       : c.name == "rjust" ? total
                                           : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += c.s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return Value::from(std::move(out));
}

Value zfill(const StrCall& c) {
  const int64_t width = bounded_size(c.bind({{"width", std::nullopt}})[0], "width");
  const int64_t n = py::length(c.s);
  if (width <= n) return Value::from(c.s);
  const size_t sign = !c.s.empty() && (c.s[0] == '+' || c.s[0] == '-') ? 1 : 0;
  return Value::from(c.s.substr(0, sign) + std::string(static_cast<size_t>(width - n), '0') +
                     c.s.substr(sign));
}

Value partition(const StrCall& c) {
  const std::string sep = as_text(c.bind({{"sep", std::nullopt}})[0], "sep");
  if (sep.empty()) fail("ValueError", "empty separator");
  const bool first = c.name == "partition";
  const size_t at = first ? c.s.find(sep) : c.s.rfind(sep);
  const Value none = Value::from(std::string());
  List parts;
  if (at == std::string::npos) {
    parts = first ? List{Value::from(c.s), none, none} : List{none, none, Value::from(c.s)};
  } else {
    parts = {Value::from(c.s.substr(0, at)), Value::from(sep),
             Value::from(c.s.substr(at + sep.size()))};
  }
  return Value::from(std::move(parts), Value::Kind::Tuple);
}

Value format(const StrCall& c) { return str_format(c.s, c.args); }

using StrMethod = Value (*)(const StrCall&);

/// Each method by name; several names share a function that reads the name it was called by.
const std::unordered_map<std::string, StrMethod>& str_methods() {
  static const std::unordered_map<std::string, StrMethod> methods = {
      {"strip", strip},
      {"lstrip", strip},
      {"rstrip", strip},
      {"split", split},
      {"rsplit", split},
      {"startswith", starts_ends},
      {"endswith", starts_ends},
      {"replace", replace},
      {"upper", mapped<py::upper>},
      {"lower", mapped<py::lower>},
      {"casefold", mapped<py::lower>},
      {"title", mapped<py::title>},
      {"capitalize", mapped<py::capitalize>},
      {"swapcase", mapped<py::swapcase>},
      {"find", find},
      {"rfind", find},
      {"index", find},
      {"rindex", find},
      {"count", count},
      {"join", join},
      {"splitlines", splitlines},
      {"removeprefix", remove_affix},
      {"removesuffix", remove_affix},
      {"isdigit", all_of<py::is_digit>},
      {"isdecimal", all_of<py::is_digit>},
      {"isnumeric", all_of<py::is_digit>},
      {"isalpha", all_of<py::is_alpha>},
      {"isalnum", all_of<py::is_alnum>},
      {"isspace", all_of<py::is_space>},
      {"isascii", ascii},
      {"isprintable", printable},
      {"istitle", titled},
      {"islower", islower_isupper},
      {"isupper", islower_isupper},
      {"center", justify},
      {"ljust", justify},
      {"rjust", justify},
      {"zfill", zfill},
      {"partition", partition},
      {"rpartition", partition},
      {"format", format},
  };
  return methods;
}

}  // namespace

/// str's methods: nullopt when `name` is none of those unitrain runs.
std::optional<Value> string_method(const Value& self, const std::string& name, const Args& args) {
  const auto& methods = str_methods();
  const auto it = methods.find(name);
  if (it == methods.end()) return std::nullopt;
  return it->second(StrCall{self.text, name, args});
}

}  // namespace unitrain::jinja
