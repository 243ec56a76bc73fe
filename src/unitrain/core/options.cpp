#include "unitrain/core/options.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "unitrain/core/error.h"

namespace unitrain::option_detail {
namespace {

template <typename E, typename Text>
std::string flow_list(const std::vector<E>& v, Text text) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + text(v[i]);
  return out + "]";
}

// `s` as a YAML double-quoted scalar: control characters escaped (\n, \t, \xHH), so that it
// reads back byte for byte.
std::string double_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
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
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string yaml_text(const std::string& s) {
  const bool control =
      std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (control) return double_quoted(s);  // a single-quoted line break folds into a space
  try {
    const YAML::Node node = YAML::Load(s);
    if (!s.empty() && node.IsScalar() && node.Scalar() == s && s.find('#') == std::string::npos) {
      return s;
    }
  } catch (const YAML::Exception&) {  // e.g. ',' cannot start a plain scalar
  }
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

std::string yaml_text(const std::vector<int64_t>& v) {
  return flow_list(v, [](int64_t x) { return std::to_string(x); });
}

std::string yaml_text(const std::vector<double>& v) {
  return flow_list(v, [](double x) { return fmt::format("{}", x); });
}

std::string yaml_text(const std::vector<std::string>& v) {
  return flow_list(v, [](const std::string& x) { return yaml_text(x); });
}

void throw_unknown_name(const std::string& key, const std::string& name) {
  throw ConfigError(detail::concat(key, ": '", name, "' is not a known value"));
}

}  // namespace unitrain::option_detail

namespace unitrain {

NamedStrings string_map_of(const Config& section, const std::string& key,
                           const std::string& example) {
  NamedStrings out;
  if (!section.has(key)) return out;
  const Config map = section.at(key);
  UT_CHECK(map.node().IsMap(), section.key_path(key), ": expected a map such as ", example,
           ", got '", YAML::Dump(map.node()), "'");
  for (const std::string& k : map.keys()) out.emplace_back(k, map.get_string(k));
  return out;
}

}  // namespace unitrain
