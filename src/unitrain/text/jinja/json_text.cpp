// json.dumps of template values, as transformers' tojson filter calls it (ensure_ascii, indent,
// separators, sort_keys; floats as Python's repr, NaN and Infinity as json writes them).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "unitrain/text/jinja/py_str.h"
#include "unitrain/text/jinja/value.h"

namespace unitrain::jinja {
namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : py::decode(s)) {
    char buf[16];
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
          if (c >= 0x10000) {  // a surrogate pair, as json.dumps writes it
            const char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10),
                          0xDC00 + (v & 0x3FF));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          }
          out += buf;
        } else {
          out += py::encode(std::u32string(1, c));
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonStyle& style, int depth) {
  const bool pretty = style.indent >= 0 || !style.indent_text.empty();
  const std::string item_sep = !style.item_separator.empty() ? style.item_separator
                               : pretty                      ? ","
                                                             : ", ";
  const std::string key_sep = !style.key_separator.empty() ? style.key_separator : ": ";
  const std::string unit =
      !style.indent_text.empty() ? style.indent_text : std::string(std::max(style.indent, 0), ' ');
  auto newline = [&](int d) {
    if (pretty)
      out += "\n" + [&] {
        std::string s;
        for (int i = 0; i < d; ++i) s += unit;
        return s;
      }();
  };
  switch (v.kind) {
    case Value::Kind::None:
      out += "null";
      return;
    case Value::Kind::Bool:
      out += v.boolean ? "true" : "false";
      return;
    case Value::Kind::Int:
      out += std::to_string(v.integer);
      return;
    case Value::Kind::Float:
      out += std::isnan(v.real)   ? "NaN"
             : std::isinf(v.real) ? (v.real < 0 ? "-Infinity" : "Infinity")
                                  : float_repr(v.real);
      return;
    case Value::Kind::String:
      json_string(out, v.text, style.ensure_ascii);
      return;
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_value(out, (*v.list)[i], style, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : v.dict->items) items.push_back(&item);
      if (style.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_string(out, items[i]->first, style.ensure_ascii);
        out += key_sep;
        json_value(out, items[i]->second, style, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      fail("TypeError", "Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(out, v, style, 0);
  return out;
}

}  // namespace unitrain::jinja
