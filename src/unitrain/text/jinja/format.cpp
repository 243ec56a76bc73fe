// Python's two string formattings as templates call them: `'%s' % x` (and the format filter),
// and str.format with its mini-language ([[fill]align][sign][#][0][width][,][.precision][type]).
#include <cmath>
#include <cstdio>

#include "unitrain/text/jinja/builtins.h"
#include "unitrain/text/jinja/py_str.h"

namespace unitrain::jinja {
namespace {

std::string printf_number(const std::string& spec, double d) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), d);
  return buf;
}

std::string printf_int(const std::string& spec, long long i) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), i);
  return buf;
}

/// `s` padded to `width` code points: on the left unless `left`.
std::string pad(const std::string& s, int64_t width, bool left, char32_t fill = ' ') {
  const int64_t n = py::length(s);
  if (width <= n) return s;
  std::string f;
  for (int64_t i = n; i < width; ++i) f += py::encode({fill});
  return left ? s + f : f + s;
}

double as_number(const Value& v, const char* what) {
  if (!v.is_number()) {
    v.defined();
    fail("TypeError",
         std::string("%") + what + " format: a real number is required, not " + v.type_name());
  }
  return v.as_double();
}

}  // namespace

std::string percent_format(const std::string& fmt, const Args& args) {
  std::string out;
  size_t next = 0;
  const bool by_name = !args.keywords.empty();
  auto take = [&](const std::string& key) -> Value {
    if (!key.empty()) {
      for (const auto& [k, v] : args.keywords) {
        if (k == key) return v;
      }
      fail("KeyError", "'" + key + "'");
    }
    if (by_name) fail("TypeError", "format requires a mapping");
    if (next >= args.positional.size()) fail("TypeError", "not enough arguments for format string");
    return args.positional[next++];
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    ++i;
    std::string key;
    if (i < fmt.size() && fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos) fail("ValueError", "incomplete format key");
      key = fmt.substr(i + 1, close - i - 1);
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ 0#").find(fmt[i]) != std::string_view::npos)
      flags += fmt[i++];
    std::string width, precision;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) width += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      precision = ".";
      for (++i; i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]));)
        precision += fmt[i++];
    }
    if (i >= fmt.size()) fail("ValueError", "incomplete format");
    const char type = fmt[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    const Value v = take(key);
    const int64_t w = bounded_size(width, "the width");
    const bool left = flags.find('-') != std::string::npos;
    if (type == 's' || type == 'r' || type == 'a') {
      std::string s = type == 's' ? str(v) : repr(v);
      if (precision.size() > 1)
        s = py::slice(s, false, 0, true, bounded_size(precision.substr(1), "the precision"), 1);
      out += pad(s, w, left);
    } else if (type == 'd' || type == 'i' || type == 'u') {
      const long long n =
          v.kind == Value::Kind::Float ? static_cast<long long>(v.real) : to_int(v, "%d format");
      out += printf_int("%" + flags + width + precision + "lld", n);
    } else if (type == 'x' || type == 'X' || type == 'o') {
      const long long n = to_int(v, "%x format");
      const std::string digits =
          printf_int("%" + flags + width + precision + "ll" + std::string(1, type), std::llabs(n));
      out += n < 0 ? "-" + digits : digits;
    } else if (std::string_view("eEfFgG").find(type) != std::string_view::npos) {
      out += printf_number(
          "%" + flags + width + (precision.empty() ? ".6" : precision) + std::string(1, type),
          as_number(v, "f"));
    } else if (type == 'c') {
      out += pad(v.is_string() ? v.text : py::encode({static_cast<char32_t>(to_int(v, "%c"))}), w,
                 left);
    } else {
      fail("ValueError", std::string("unsupported format character '") + type + "'");
    }
  }
  if (!by_name && next < args.positional.size()) {
    fail("TypeError", "not all arguments converted during string formatting");
  }
  return out;
}

namespace {

/// One replacement field's value formatted by `spec` (the format-spec mini-language).
std::string format_field(const Value& v, const std::string& spec) {
  if (spec.empty()) return str(v);
  size_t i = 0;
  char32_t fill = ' ';
  char align = 0;
  const std::u32string u = py::decode(spec);
  if (u.size() >= 2 && std::u32string_view(U"<>=^").find(u[1]) != std::u32string_view::npos) {
    fill = u[0];
    align = static_cast<char>(u[1]);
    i = 2;
  } else if (!u.empty() && std::u32string_view(U"<>=^").find(u[0]) != std::u32string_view::npos) {
    align = static_cast<char>(u[0]);
    i = 1;
  }
  std::string flags;
  if (i < u.size() && (u[i] == '+' || u[i] == '-' || u[i] == ' '))
    flags += static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == '#') flags += static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == '0') {
    if (!align) fill = '0', align = '=';
    ++i;
  }
  int64_t width = 0;
  while (i < u.size() && u[i] >= '0' && u[i] <= '9') {
    width = width * 10 + (u[i++] - '0');
    if (width > (int64_t{1} << 24))
      fail("LimitExceeded", "the width of '" + spec + "' is past 16,777,216");
  }
  bool grouping = false;
  if (i < u.size() && (u[i] == ',' || u[i] == '_')) grouping = true, ++i;
  int64_t precision = -1;
  if (i < u.size() && u[i] == '.') {
    precision = 0;
    for (++i; i < u.size() && u[i] >= '0' && u[i] <= '9';) {
      precision = precision * 10 + (u[i++] - '0');
      if (precision > 1000) fail("LimitExceeded", "the precision of '" + spec + "' is past 1000");
    }
  }
  const char type = i < u.size() ? static_cast<char>(u[i++]) : 0;
  if (i != u.size() || grouping)
    fail("Unsupported",
         "the format spec '" + spec + "' is Python that unitrain's Jinja does not run");
  std::string body;
  if (v.is_string() || type == 's') {
    body = str(v);
    if (precision >= 0) body = py::slice(body, false, 0, true, precision, 1);
    if (!align) align = '<';
  } else if (v.is_number() && (type == 0 || std::string_view("dxXobeEfFgG%n").find(type) !=
                                                std::string_view::npos)) {
    if (!align) align = '>';
    const bool integer = v.kind != Value::Kind::Float;
    if (type == 0 && precision < 0) {
      body = integer ? std::to_string(to_int(v, "format")) : float_repr(v.real);
      if (flags.find('+') != std::string::npos && v.as_double() >= 0) body = "+" + body;
    } else if (integer && (type == 0 || type == 'd' || type == 'n')) {
      body = printf_int("%" + flags + "lld", to_int(v, "format"));
    } else if (integer && (type == 'x' || type == 'X' || type == 'o')) {
      body = printf_int("%" + flags + "ll" + std::string(1, type), to_int(v, "format"));
    } else if (type == '%') {
      body = printf_number("%" + flags + "." + std::to_string(precision < 0 ? 6 : precision) + "f",
                           v.as_double() * 100) +
             "%";
    } else if (type == 'b' || type == 'd' || type == 'x' || type == 'X' || type == 'o') {
      fail("ValueError",
           std::string("Unknown format code '") + type + "' for object of type 'float'");
    } else {
      const char t = type == 0 ? 'g' : type;
      body = printf_number(
          "%" + flags + "." + std::to_string(precision < 0 ? 6 : precision) + std::string(1, t),
          v.as_double());
    }
  } else {
    fail("Unsupported", "the format spec '" + spec + "' for a " + v.type_name() +
                            " is Python that unitrain's Jinja does not run");
  }
  const int64_t n = py::length(body);
  if (width <= n) return body;
  std::string f;
  const int64_t total = width - n;
  auto fills = [&](int64_t k) {
    std::string s;
    for (int64_t j = 0; j < k; ++j) s += py::encode({fill});
    return s;
  };
  if (align == '<') return body + fills(total);
  if (align == '^') return fills(total / 2) + body + fills(total - total / 2);
  if (align == '=' && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) {
    return body.substr(0, 1) + fills(total) + body.substr(1);
  }
  return fills(total) + body;
}

}  // namespace

Value str_format(const std::string& text, const Args& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}')
        ++i;
      else
        fail("ValueError", "Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == std::string::npos) fail("ValueError", "Single '{' encountered in format string");
    std::string field = text.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    char conversion = 0;
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
      field.resize(bang);
    }
    size_t end = field.find_first_of(".[");
    const std::string head = field.substr(0, end);
    Value v;
    if (head.empty() || std::all_of(head.begin(), head.end(), ::isdigit)) {
      const size_t index =
          head.empty() ? auto_index++ : static_cast<size_t>(bounded_size(head, "the field number"));
      if (index >= args.positional.size())
        fail("IndexError", "Replacement index " + std::to_string(index) +
                               " out of range for positional args tuple");
      v = args.positional[index];
    } else {
      auto it = std::find_if(args.keywords.begin(), args.keywords.end(),
                             [&](const auto& k) { return k.first == head; });
      if (it == args.keywords.end()) fail("KeyError", "'" + head + "'");
      v = it->second;
    }
    while (end != std::string::npos && end < field.size()) {  // .attr and [key] after the name
      if (field[end] == '.') {
        const size_t next = field.find_first_of(".[", end + 1);
        v = get_attr(v, field.substr(end + 1, next == std::string::npos ? std::string::npos
                                                                        : next - end - 1));
        end = next;
      } else {
        const size_t stop = field.find(']', end);
        if (stop == std::string::npos) fail("ValueError", "Missing ']' in format string");
        const std::string key = field.substr(end + 1, stop - end - 1);
        const bool digits = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
        v = get_item(v, digits ? Value::from(bounded_size(key, "the index")) : Value::from(key));
        end = stop + 1 < field.size() ? stop + 1 : std::string::npos;
      }
    }
    if (conversion == 'r') v = Value::from(repr(v));
    if (conversion == 's') v = Value::from(str(v));
    out += format_field(v, spec);
  }
  return Value::from(std::move(out));
}

}  // namespace unitrain::jinja
