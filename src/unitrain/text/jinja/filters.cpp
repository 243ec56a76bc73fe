// Jinja2's filters that chat templates use (jinja2/filters.py), with transformers' tojson
// (json.dumps without HTML escaping).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "unitrain/text/jinja/builtins.h"
#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {

namespace {

using Filter = std::function<Value(const Value&, Args&)>;

std::vector<Value> bound(const char* name, const Args& args, std::vector<Param> params) {
  return bind_args(name, args, params);
}

/// Jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value attribute_path(const Value& item, const Value& path) {
  if (path.kind == Value::Kind::Int) return get_item(item, path);
  Value v = item;
  const std::string p = str(path), dot = ".";
  for (const std::string& part : py::split(p, &dot, -1, false)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    v = get_item(v,
                 digits ? Value::from(static_cast<int64_t>(std::stoll(part))) : Value::from(part));
  }
  return v;
}

Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value::from(py::lower(v.text)) : v;
}

bool less(const Value& a, const Value& b) { return compare(a, "<", b); }

Value list_of(List items) { return Value::from(std::move(items)); }

Value do_tojson(const Value& v, Args& args) {
  const auto a = bound("tojson", args,
                       {{"ensure_ascii", Value::from(false)},
                        {"indent", Value::none()},
                        {"separators", Value::none()},
                        {"sort_keys", Value::from(false)}});
  JsonStyle style;
  style.ensure_ascii = a[0].truthy();
  if (a[1].kind == Value::Kind::Int)
    style.indent = static_cast<int>(std::max<int64_t>(a[1].integer, 0));
  if (a[1].is_string()) style.indent_text = a[1].text;
  if (a[1].is_string() && a[1].text.empty()) style.indent = 0;
  if (a[2].is_sequence() && a[2].list->size() == 2) {
    style.item_separator = str((*a[2].list)[0]);
    style.key_separator = str((*a[2].list)[1]);
  }
  style.sort_keys = a[3].truthy();
  return Value::from(to_json(v, style));
}

Value do_join(const Value& v, Args& args) {
  const auto a =
      bound("join", args, {{"d", Value::from(std::string())}, {"attribute", Value::none()}});
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += str(a[0]);
    first = false;
    out += str(a[1].is(Value::Kind::None) ? item : attribute_path(item, a[1]));
  }
  return Value::from(std::move(out));
}

Value do_default(const Value& v, Args& args) {
  const auto a =
      bound("default", args,
            {{"default_value", Value::from(std::string())}, {"boolean", Value::from(false)}});
  if (v.is_undefined() || (a[1].truthy() && !v.truthy())) return a[0];
  return v;
}

Value do_indent(const Value& v, Args& args) {
  const auto a = bound("indent", args,
                       {{"width", Value::from(int64_t{4})},
                        {"first", Value::from(false)},
                        {"blank", Value::from(false)}});
  const std::string pad =
      a[0].is_string()
          ? a[0].text
          : std::string(static_cast<size_t>(std::max<int64_t>(bounded_size(a[0], "width"), 0)),
                        ' ');
  const std::vector<std::string> lines = py::splitlines(str(v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i && (a[2].truthy() || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  return Value::from(a[1].truthy() ? pad + out : out);
}

Value do_title(const Value& v, Args& args) {
  bound("title", args, {});
  // Jinja2 capitalizes each run after [-\s({\[<]+, the rest lower case.
  const std::u32string u = py::decode(str(v));
  std::u32string out;
  bool start = true;
  for (char32_t c : u) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c);
    const std::string one = py::encode({c});
    out += py::decode(sep ? one : start ? py::upper(one) : py::lower(one));
    start = sep;
  }
  return Value::from(py::encode(out));
}

Value do_truncate(const Value& v, Args& args) {
  const auto a = bound("truncate", args,
                       {{"length", Value::from(int64_t{255})},
                        {"killwords", Value::from(false)},
                        {"end", Value::from(std::string("..."))},
                        {"leeway", Value::none()}});
  const std::string s = str(v);
  const int64_t length = to_int(a[0], "length"),
                leeway = a[3].is(Value::Kind::None) ? 5 : to_int(a[3], "leeway");
  const std::string end = str(a[2]);
  if (py::length(s) <= length + leeway) return Value::from(s);
  const int64_t keep = length - py::length(end);
  std::string cut = py::slice(s, false, 0, true, std::max<int64_t>(keep, 0), 1);
  if (a[1].truthy()) return Value::from(cut + end);
  const size_t space = cut.rfind(' ');
  return Value::from((space == std::string::npos ? cut : cut.substr(0, space)) + end);
}

Value do_round(const Value& v, Args& args) {
  const auto a = bound(
      "round", args,
      {{"precision", Value::from(int64_t{0})}, {"method", Value::from(std::string("common"))}});
  const int64_t precision = to_int(a[0], "precision");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const std::string method = str(a[1]);
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("FilterArgumentError", "method must be common, ceil or floor");
  }
  if (v.kind == Value::Kind::Int && method == "common" && precision >= 0)
    return v;  // int.__round__
  const double x = v.defined().as_double();
  if (method == "ceil") return Value::from(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::from(std::floor(x * scale) / scale);
  // Python's round: the exact binary value rounded half to even, as printf rounds it.
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)),
                x);
  return Value::from(std::strtod(buf, nullptr));
}

Value do_int(const Value& v, Args& args) {
  const auto a = bound("int", args,
                       {{"default", Value::from(int64_t{0})}, {"base", Value::from(int64_t{10})}});
  if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool)
    return Value::from(to_int(v, "int"));
  if (v.kind == Value::Kind::Float) return Value::from(static_cast<int64_t>(v.real));
  if (v.is_string()) {
    const std::string s = py::strip(v.text, nullptr, true, true);
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(s.c_str(), &end, static_cast<int>(to_int(a[1], "base")));
    if (!s.empty() && *end == 0 && errno == 0) return Value::from(static_cast<int64_t>(i));
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == 0 && std::isfinite(d)) return Value::from(static_cast<int64_t>(d));
  }
  return a[0];
}

Value do_float(const Value& v, Args& args) {
  const auto a = bound("float", args, {{"default", Value::from(0.0)}});
  if (v.is_number()) return Value::from(v.as_double());
  if (v.is_string()) {
    const std::string s = py::strip(v.text, nullptr, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == 0) return Value::from(d);
  }
  return a[0];
}

Value do_sort(const Value& v, Args& args) {
  const auto a = bound("sort", args,
                       {{"reverse", Value::from(false)},
                        {"case_sensitive", Value::from(false)},
                        {"attribute", Value::none()}});
  List items = iterate(v);
  auto key = [&](const Value& item) {
    return sort_key(a[2].is(Value::Kind::None) ? item : attribute_path(item, a[2]), a[1].truthy());
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return a[0].truthy() ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return list_of(std::move(items));
}

Value do_unique(const Value& v, Args& args) {
  const auto a =
      bound("unique", args, {{"case_sensitive", Value::from(false)}, {"attribute", Value::none()}});
  List out, seen;
  for (const Value& item : iterate(v)) {
    const Value k =
        sort_key(a[1].is(Value::Kind::None) ? item : attribute_path(item, a[1]), a[0].truthy());
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return list_of(std::move(out));
}

Value do_min_max(const Value& v, Args& args, bool max) {
  const auto a = bound(max ? "max" : "min", args,
                       {{"case_sensitive", Value::from(false)}, {"attribute", Value::none()}});
  const List items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    return sort_key(a[1].is(Value::Kind::None) ? item : attribute_path(item, a[1]), a[0].truthy());
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    if (max ? less(key(items[best]), key(items[i])) : less(key(items[i]), key(items[best])))
      best = i;
  }
  return items[best];
}

Value add(const Value& a, const Value& b) {
  if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float)
    return Value::from(a.as_double() + b.as_double());
  if (a.is_number() && b.is_number()) return Value::from(to_int(a, "sum") + to_int(b, "sum"));
  fail("TypeError",
       "unsupported operand type(s) for +: '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value do_sum(const Value& v, Args& args) {
  const auto a =
      bound("sum", args, {{"attribute", Value::none()}, {"start", Value::from(int64_t{0})}});
  Value total = a[1];
  for (const Value& item : iterate(v))
    total = add(total, a[0].is(Value::Kind::None) ? item : attribute_path(item, a[0]));
  return total;
}

Value do_dictsort(const Value& v, Args& args) {
  const auto a = bound("dictsort", args,
                       {{"case_sensitive", Value::from(false)},
                        {"by", Value::from(std::string("key"))},
                        {"reverse", Value::from(false)}});
  if (!v.is_mapping()) fail("TypeError", "dictsort needs a dict, got " + v.type_name());
  const size_t pos = str(a[1]) == "value" ? 1 : 0;
  List items;
  for (const auto& [k, item] : v.dict->items)
    items.push_back(Value::from(List{Value::from(k), item}, Value::Kind::Tuple));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key((*x.list)[pos], a[0].truthy()),
                ky = sort_key((*y.list)[pos], a[0].truthy());
    return a[2].truthy() ? less(ky, kx) : less(kx, ky);
  });
  return list_of(std::move(items));
}

Value do_batch(const Value& v, Args& args) {
  const auto a = bound("batch", args, {{"linecount", std::nullopt}, {"fill_with", Value::none()}});
  const int64_t n = bounded_size(a[0], "linecount");
  if (n <= 0) fail("FilterArgumentError", "batch size must be positive");
  List out, row;
  for (const Value& item : iterate(v)) {
    row.push_back(item);
    if (static_cast<int64_t>(row.size()) == n) out.push_back(list_of(std::move(row))), row.clear();
  }
  if (!row.empty()) {
    if (!a[1].is(Value::Kind::None)) row.resize(static_cast<size_t>(n), a[1]);
    out.push_back(list_of(std::move(row)));
  }
  return list_of(std::move(out));
}

Value do_escape(const Value& v, Args& args) {
  bound("escape", args, {});
  if (v.markup) return v;
  std::string out;
  for (char c : str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  Value m = Value::from(std::move(out));
  m.markup = true;
  return m;
}

Value do_center(const Value& v, Args& args) {
  const auto a = bound("center", args, {{"width", Value::from(int64_t{80})}});
  const std::string s = str(v);
  const int64_t width = bounded_size(a[0], "width"), n = py::length(s);
  if (width <= n) return Value::from(s);
  const int64_t total = width - n, left = total / 2 + (total & width & 1);
  return Value::from(std::string(static_cast<size_t>(left), ' ') + s +
                     std::string(static_cast<size_t>(total - left), ' '));
}

/// select/reject/selectattr/rejectattr: the items whose test (or truth) is `keep`.
Value select(const Value& v, Args& args, bool by_attribute, bool keep) {
  if (args.positional.empty() && by_attribute)
    fail("FilterArgumentError", "Missing parameter for attribute name");
  size_t next = 0;
  Value path = by_attribute ? args.positional[next++] : Value();
  std::string test;
  if (next < args.positional.size()) test = str(args.positional[next++]);
  Args test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<long>(next),
                              args.positional.end());
  test_args.keywords = args.keywords;
  List out;
  for (const Value& item : iterate(v)) {
    const Value x = by_attribute ? attribute_path(item, path) : item;
    Args a = test_args;
    const bool passed = test.empty() ? x.truthy() : apply_test(test, x, a);
    if (passed == keep) out.push_back(item);
  }
  return list_of(std::move(out));
}

Value do_map(const Value& v, Args& args) {
  List out;
  const auto attr = std::find_if(args.keywords.begin(), args.keywords.end(),
                                 [](const auto& k) { return k.first == "attribute"; });
  if (attr != args.keywords.end()) {
    const auto fallback = std::find_if(args.keywords.begin(), args.keywords.end(),
                                       [](const auto& k) { return k.first == "default"; });
    for (const Value& item : iterate(v)) {
      Value x = attribute_path(item, attr->second);
      if (x.is_undefined() && fallback != args.keywords.end()) x = fallback->second;
      out.push_back(x);
    }
    return list_of(std::move(out));
  }
  if (args.positional.empty()) fail("FilterArgumentError", "map requires a filter argument");
  const std::string filter = str(args.positional[0]);
  Args rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value& item : iterate(v)) {
    Args a = rest;
    out.push_back(apply_filter(filter, item, a));
  }
  return list_of(std::move(out));
}

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> table = [] {
    std::map<std::string, Filter> f;
    auto text = [](Value (*fn)(const std::string&)) {
      return [fn](const Value& v, Args& args) {
        bind_args("filter", args, {});
        return fn(str(v));
      };
    };
    f["trim"] = [](const Value& v, Args& args) {
      const auto a = bound("trim", args, {{"chars", Value::none()}});
      const std::u32string chars = a[0].is(Value::Kind::None) ? U"" : py::decode(str(a[0]));
      return Value::from(
          py::strip(str(v), a[0].is(Value::Kind::None) ? nullptr : &chars, true, true));
    };
    f["length"] = f["count"] = [](const Value& v, Args& args) {
      bound("length", args, {});
      return Value::from(length(v));
    };
    f["tojson"] = do_tojson;
    f["string"] = [](const Value& v, Args& args) {
      bound("string", args, {});
      return Value::from(str(v));
    };
    f["list"] = [](const Value& v, Args& args) {
      bound("list", args, {});
      return list_of(iterate(v));
    };
    f["join"] = do_join;
    f["lower"] = text([](const std::string& s) { return Value::from(py::lower(s)); });
    f["upper"] = text([](const std::string& s) { return Value::from(py::upper(s)); });
    f["capitalize"] = text([](const std::string& s) { return Value::from(py::capitalize(s)); });
    f["title"] = do_title;
    f["replace"] = [](const Value& v, Args& args) {
      const auto a =
          bound("replace", args,
                {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::none()}});
      return Value::from(py::replace(str(v), str(a[0]), str(a[1]),
                                     a[2].is(Value::Kind::None) ? -1 : to_int(a[2], "count")));
    };
    f["first"] = [](const Value& v, Args& args) {
      bound("first", args, {});
      const List items = iterate(v);
      return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
    };
    f["last"] = [](const Value& v, Args& args) {
      bound("last", args, {});
      const List items = iterate(v);
      return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
    };
    f["default"] = f["d"] = do_default;
    f["selectattr"] = [](const Value& v, Args& a) { return select(v, a, true, true); };
    f["rejectattr"] = [](const Value& v, Args& a) { return select(v, a, true, false); };
    f["select"] = [](const Value& v, Args& a) { return select(v, a, false, true); };
    f["reject"] = [](const Value& v, Args& a) { return select(v, a, false, false); };
    f["map"] = do_map;
    f["items"] = [](const Value& v, Args& args) {
      bound("items", args, {});
      if (v.is_undefined()) return list_of({});
      if (!v.is_mapping()) fail("TypeError", "Can only get item pairs from a mapping.");
      List out;
      for (const auto& [k, item] : v.dict->items)
        out.push_back(Value::from(List{Value::from(k), item}, Value::Kind::Tuple));
      return list_of(std::move(out));
    };
    f["int"] = do_int;
    f["float"] = do_float;
    f["abs"] = [](const Value& v, Args& args) {
      bound("abs", args, {});
      if (v.kind == Value::Kind::Float) return Value::from(std::fabs(v.real));
      return Value::from(std::abs(to_int(v, "abs")));
    };
    f["round"] = do_round;
    f["sort"] = do_sort;
    f["unique"] = do_unique;
    f["reverse"] = [](const Value& v, Args& args) {
      bound("reverse", args, {});
      if (v.is_string()) return Value::from(py::slice(v.text, false, 0, false, 0, -1));
      List items = iterate(v);
      std::reverse(items.begin(), items.end());
      return list_of(std::move(items));
    };
    f["indent"] = do_indent;
    f["safe"] = [](const Value& v, Args& args) {
      bound("safe", args, {});
      return v.is_string() ? v : Value::from(str(v));
    };
    f["e"] = f["escape"] = f["forceescape"] = do_escape;
    f["wordcount"] = [](const Value& v, Args& args) {
      bound("wordcount", args, {});
      int64_t n = 0;
      bool in_word = false;
      for (char32_t c : py::decode(str(v))) {
        const bool w = py::is_alnum(c) || c == '_';
        n += w && !in_word;
        in_word = w;
      }
      return Value::from(n);
    };
    f["center"] = do_center;
    f["truncate"] = do_truncate;
    f["batch"] = do_batch;
    f["dictsort"] = do_dictsort;
    f["sum"] = do_sum;
    f["min"] = [](const Value& v, Args& a) { return do_min_max(v, a, false); };
    f["max"] = [](const Value& v, Args& a) { return do_min_max(v, a, true); };
    f["attr"] = [](const Value& v, Args& args) {
      const auto a = bound("attr", args, {{"name", std::nullopt}});
      const std::optional<Value> found = attribute_of(v, str(a[0]));
      return found ? *found
                   : Value::undefined("'" + v.type_name() + " object' has no attribute '" +
                                      str(a[0]) + "'");
    };
    f["format"] = [](const Value& v, Args& args) {
      if (!args.positional.empty() && !args.keywords.empty()) {
        fail("FilterArgumentError",
             "can't handle positional and keyword arguments at the same time");
      }
      return Value::from(percent_format(str(v), args));
    };
    f["slice"] = [](const Value& v, Args& args) {
      const auto a = bound("slice", args, {{"slices", std::nullopt}, {"fill_with", Value::none()}});
      const List items = iterate(v);
      const int64_t n = static_cast<int64_t>(items.size()), k = bounded_size(a[0], "slices");
      if (k <= 0) fail("FilterArgumentError", "slices must be positive");
      const int64_t per = n / k, extra = n % k;
      List out;
      int64_t offset = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t start = offset + i * per;
        if (i < extra) ++offset;
        const int64_t end = offset + (i + 1) * per;
        List part(items.begin() + start, items.begin() + end);
        if (!a[1].is(Value::Kind::None) && i >= extra) part.push_back(a[1]);
        out.push_back(list_of(std::move(part)));
      }
      return list_of(std::move(out));
    };
    return f;
  }();
  return table;
}

/// Jinja2's builtins that unitrain does not run: refused by name rather than called unknown.
const std::set<std::string> jinja_filters_not_run = {"filesizeformat", "groupby",   "pprint",
                                                     "random",         "striptags", "urlencode",
                                                     "urlize",         "wordwrap",  "xmlattr"};

}  // namespace

Value apply_filter(const std::string& name, const Value& operand, Args& args) {
  const auto& table = filters();
  const auto it = table.find(name);
  if (it == table.end()) {
    if (jinja_filters_not_run.count(name))
      fail("Unsupported", "the filter '" + name + "' is Jinja that unitrain does not run");
    fail("TemplateRuntimeError", "No filter named '" + name + "'.");
  }
  if (operand.unsafe) operand.defined();
  return it->second(operand, args);
}

bool is_filter(const std::string& name) { return filters().count(name) > 0; }

}  // namespace unitrain::jinja
