#include "unitrain/text/jinja/py_str.h"

#include <utf8proc.h>

#include <algorithm>

namespace unitrain::jinja::py {
namespace {

bool is_category(char32_t c, std::initializer_list<utf8proc_category_t> categories) {
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return std::find(categories.begin(), categories.end(), cat) != categories.end();
}

bool is_cased(char32_t c) {
  return is_category(c, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT});
}

char32_t to_upper(char32_t c) {
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_lower(char32_t c) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_title(char32_t c) {
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

template <typename F>
std::string map_chars(std::string_view s, F f) {
  std::u32string u = decode(s);
  for (char32_t& c : u) c = f(c);
  return encode(u);
}

bool in(const std::u32string* chars, char32_t c) {
  return chars ? chars->find(c) != std::u32string::npos : is_space(c);
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

}  // namespace

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n =
        utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(s.size() - i), &c);
    if (n <= 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(c));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

std::string encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  utf8proc_uint8_t buf[4];
  for (char32_t c : s) {
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

int64_t length(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  return !is_category(
      c, {UTF8PROC_CATEGORY_CC, UTF8PROC_CATEGORY_CF, UTF8PROC_CATEGORY_CS, UTF8PROC_CATEGORY_CO,
          UTF8PROC_CATEGORY_CN, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP, UTF8PROC_CATEGORY_ZS});
}

bool is_alpha(char32_t c) {
  return is_category(c, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT,
                         UTF8PROC_CATEGORY_LM, UTF8PROC_CATEGORY_LO});
}
bool is_digit(char32_t c) { return is_category(c, {UTF8PROC_CATEGORY_ND}); }
bool is_alnum(char32_t c) {
  return is_alpha(c) ||
         is_category(c, {UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO});
}
bool is_lower(char32_t c) { return is_category(c, {UTF8PROC_CATEGORY_LL}); }
bool is_upper(char32_t c) { return is_category(c, {UTF8PROC_CATEGORY_LU}); }

std::string upper(std::string_view s) {
  // Python's full mapping where it differs from the simple one chat text meets: ß and ligatures.
  std::u32string out;
  for (char32_t c : decode(s)) {
    switch (c) {
      case 0xDF:
        out += U"SS";
        break;
      case 0xFB00:
        out += U"FF";
        break;
      case 0xFB01:
        out += U"FI";
        break;
      case 0xFB02:
        out += U"FL";
        break;
      case 0xFB03:
        out += U"FFI";
        break;
      case 0xFB04:
        out += U"FFL";
        break;
      default:
        out += to_upper(c);
    }
  }
  return encode(out);
}
std::string lower(std::string_view s) { return map_chars(s, to_lower); }
std::string swapcase(std::string_view s) {
  return map_chars(s, [](char32_t c) {
    return is_upper(c) ? to_lower(c) : is_lower(c) ? to_upper(c) : c;
  });
}

std::string title(std::string_view s) {
  bool previous_cased = false;
  return map_chars(s, [&](char32_t c) {
    const char32_t out = previous_cased ? to_lower(c) : to_title(c);
    previous_cased = is_cased(c);
    return out;
  });
}

std::string capitalize(std::string_view s) {
  bool first = true;
  return map_chars(s, [&](char32_t c) {
    const char32_t out = first ? to_title(c) : to_lower(c);
    first = false;
    return out;
  });
}

std::string strip(std::string_view s, const std::u32string* chars, bool left, bool right) {
  const std::u32string u = decode(s);
  size_t begin = 0, end = u.size();
  while (left && begin < end && in(chars, u[begin])) ++begin;
  while (right && end > begin && in(chars, u[end - 1])) --end;
  return encode(u.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (!from_right) {
      size_t start = 0;
      for (size_t at; (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) &&
                      (at = s.find(*sep, start)) != std::string_view::npos;) {
        parts.emplace_back(s.substr(start, at - start));
        start = at + sep->size();
      }
      parts.emplace_back(s.substr(start));
      return parts;
    }
    size_t end = s.size();
    for (size_t at; (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) &&
                    end >= sep->size() &&
                    (at = s.rfind(*sep, end - sep->size())) != std::string_view::npos;) {
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  const std::u32string u = decode(s);
  const int64_t n = static_cast<int64_t>(u.size());
  if (!from_right) {
    int64_t i = 0;
    while (true) {
      while (i < n && is_space(u[i])) ++i;
      if (i == n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        int64_t end = n;
        while (end > i && is_space(u[end - 1])) --end;
        parts.push_back(encode(u.substr(i, end - i)));
        break;
      }
      int64_t j = i;
      while (j < n && !is_space(u[j])) ++j;
      parts.push_back(encode(u.substr(i, j - i)));
      i = j;
    }
    return parts;
  }
  int64_t i = n;
  while (true) {
    while (i > 0 && is_space(u[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      int64_t begin = 0;
      while (begin < i && is_space(u[begin])) ++begin;
      parts.push_back(encode(u.substr(begin, i - begin)));
      break;
    }
    int64_t j = i;
    while (j > 0 && !is_space(u[j - 1])) --j;
    parts.push_back(encode(u.substr(j, i - j)));
    i = j;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string u = decode(s);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    if (!is_line_break(u[i])) continue;
    size_t end = i;
    if (u[i] == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
    lines.push_back(encode(u.substr(start, (keepends ? i + 1 : end) - start)));
    start = i + 1;
  }
  if (start < u.size()) lines.push_back(encode(u.substr(start)));
  return lines;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python puts `to` around every character
    const std::u32string u = decode(s);
    int64_t done = 0;
    for (char32_t c : u) {
      if (count < 0 || done < count) out += to, ++done;
      out += encode(std::u32string(1, c));
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  for (size_t at; (count < 0 || done < count) && (at = s.find(from, start)) != s.npos; ++done) {
    out.append(s.substr(start, at - start));
    out.append(to);
    start = at + from.size();
  }
  out.append(s.substr(start));
  return out;
}

int64_t find(std::string_view s, std::string_view sub, bool from_right) {
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  return at == std::string_view::npos ? -1 : length(s.substr(0, at));
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return length(s) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != s.npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::vector<int64_t> slice_positions(int64_t n, bool has_start, int64_t start, bool has_stop,
                                     int64_t stop, int64_t step) {
  const int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
  auto clamp = [&](int64_t i) {
    if (i < 0) i = std::max(i + n, lower);
    return std::min(i, upper);
  };
  start = has_start ? clamp(start) : (step < 0 ? upper : lower);
  stop = has_stop ? clamp(stop) : (step < 0 ? lower : upper);
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

std::string slice(std::string_view s, bool has_start, int64_t start, bool has_stop, int64_t stop,
                  int64_t step) {
  const std::u32string u = decode(s);
  std::u32string out;
  for (int64_t i :
       slice_positions(static_cast<int64_t>(u.size()), has_start, start, has_stop, stop, step)) {
    out.push_back(u[static_cast<size_t>(i)]);
  }
  return encode(out);
}

}  // namespace unitrain::jinja::py
