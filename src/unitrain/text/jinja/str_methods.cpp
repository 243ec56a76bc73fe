// The methods of str a template may call (Python's, on code points): strip, split, replace,
// startswith, find, join, format, the is* predicates, ...
#include <algorithm>

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

}  // namespace

/// str's methods: nullopt when `name` is none of those unitrain runs.
std::optional<Value> string_method(const Value& self, const std::string& name, const Args& args) {
  const std::string& s = self.text;
  auto b = [&](std::vector<Param> params) { return bind_args(name, args, params); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto a = b({{"chars", Value::none()}});
    const auto chars = strip_chars(a[0]);
    return Value::from(py::strip(s, chars ? &*chars : nullptr, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const auto a = b({{"sep", Value::none()}, {"maxsplit", Value::from(int64_t{-1})}});
    std::optional<std::string> sep;
    if (!a[0].is(Value::Kind::None)) sep = as_text(a[0], "sep");
    if (sep && sep->empty()) fail("ValueError", "empty separator");
    return text_list(
        py::split(s, sep ? &*sep : nullptr, to_int(a[1], "maxsplit"), name == "rsplit"));
  }
  if (name == "startswith" || name == "endswith") {
    const auto a = b({{"prefix", std::nullopt}, {"start", Value::none()}, {"end", Value::none()}});
    return Value::from(starts_or_ends(s, a[0], name == "startswith", a[1], a[2]));
  }
  if (name == "replace") {
    const auto a =
        b({{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::from(int64_t{-1})}});
    return Value::from(py::replace(s, as_text(a[0], "replace arg 1"),
                                   as_text(a[1], "replace arg 2"), to_int(a[2], "count")));
  }
  if (name == "upper") return b({}), Value::from(py::upper(s));
  if (name == "lower" || name == "casefold") return b({}), Value::from(py::lower(s));
  if (name == "title") return b({}), Value::from(py::title(s));
  if (name == "capitalize") return b({}), Value::from(py::capitalize(s));
  if (name == "swapcase") return b({}), Value::from(py::swapcase(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const auto a = b({{"sub", std::nullopt}});
    const int64_t at = py::find(s, as_text(a[0], "must be str"), name[0] == 'r');
    if (at < 0 && name.find("index") != std::string::npos)
      fail("ValueError", "substring not found");
    return Value::from(at);
  }
  if (name == "count") {
    const auto a = b({{"sub", std::nullopt}});
    return Value::from(py::count(s, as_text(a[0], "must be str")));
  }
  if (name == "join") {
    const auto a = b({{"iterable", std::nullopt}});
    std::string out;
    bool first = true;
    for (const Value& item : iterate(a[0])) {
      if (!first) out += s;
      first = false;
      out += as_text(item, "sequence item");
    }
    return Value::from(std::move(out));
  }
  if (name == "splitlines") {
    const auto a = b({{"keepends", Value::from(false)}});
    return text_list(py::splitlines(s, a[0].truthy()));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string affix = as_text(b({{"affix", std::nullopt}})[0], name + " arg");
    const bool prefix = name == "removeprefix";
    if (affix.empty() || !starts_or_ends(s, Value::from(affix), prefix)) return Value::from(s);
    return Value::from(prefix ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()));
  }
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    return b({}), all_chars(s, py::is_digit);
  }
  if (name == "isalpha") return b({}), all_chars(s, py::is_alpha);
  if (name == "isascii") {
    b({});
    return Value::from(std::all_of(s.begin(), s.end(), [](char c) { return (c & 0x80) == 0; }));
  }
  if (name == "isprintable") {
    b({});
    const std::u32string u = py::decode(s);
    return Value::from(std::all_of(u.begin(), u.end(), py::is_printable));
  }
  if (name == "istitle") {
    b({});
    bool cased = false, previous_cased = false;
    for (char32_t c : py::decode(s)) {
      const bool upper = py::is_upper(c) || (py::is_alpha(c) && !py::is_lower(c) &&
                                             py::upper(py::encode({c})) != py::encode({c}));
      if (upper) {
        if (previous_cased) return Value::from(false);
        previous_cased = cased = true;
      } else if (py::is_lower(c)) {
        if (!previous_cased) return Value::from(false);
        previous_cased = cased = true;
      } else {
        previous_cased = false;
      }
    }
    return Value::from(cased);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    const auto a = b({{"width", std::nullopt}, {"fillchar", Value::from(std::string(" "))}});
    const int64_t n = py::length(s), width = bounded_size(a[0], "width");
    const std::string fill = as_text(a[1], "fillchar");
    if (py::length(fill) != 1)
      fail("TypeError", "The fill character must be exactly one character long");
    if (width <= n) return Value::from(s);
    const int64_t total = width - n;
    const int64_t left = name == "ljust"   ? 0
                         : name == "rjust" ? total
                                           : total / 2 + (total & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < total - left; ++i) out += fill;
    return Value::from(std::move(out));
  }
  if (name == "zfill") {
    const int64_t width = bounded_size(b({{"width", std::nullopt}})[0], "width"), n = py::length(s);
    if (width <= n) return Value::from(s);
    const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    return Value::from(s.substr(0, sign) + std::string(static_cast<size_t>(width - n), '0') +
                       s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    const std::string sep = as_text(b({{"sep", std::nullopt}})[0], "sep");
    if (sep.empty()) fail("ValueError", "empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    List parts;
    if (at == std::string::npos) {
      parts = name == "partition"
                  ? List{Value::from(s), Value::from(std::string()), Value::from(std::string())}
                  : List{Value::from(std::string()), Value::from(std::string()), Value::from(s)};
    } else {
      parts = {Value::from(s.substr(0, at)), Value::from(sep),
               Value::from(s.substr(at + sep.size()))};
    }
    return Value::from(std::move(parts), Value::Kind::Tuple);
  }
  if (name == "format") return str_format(s, args);
  if (name == "isalnum") return b({}), all_chars(s, py::is_alnum);
  if (name == "isspace") return b({}), all_chars(s, py::is_space);
  if (name == "islower" || name == "isupper") {
    b({});
    const std::u32string u = py::decode(s);
    const bool lower = name == "islower";
    bool cased = false;
    for (char32_t c : u) {
      if (lower ? py::is_upper(c) : py::is_lower(c)) return Value::from(false);
      cased |= lower ? py::is_lower(c) : py::is_upper(c);
    }
    return Value::from(cased);
  }
  return std::nullopt;
}

}  // namespace unitrain::jinja
