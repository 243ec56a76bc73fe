#include "unitrain/core/options.h"

#include <fmt/format.h>

#include "unitrain/core/error.h"

namespace unitrain::option_detail {
namespace {

template <typename E, typename Text>
std::string flow_list(const std::vector<E>& v, Text text) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + text(v[i]);
  return out + "]";
}

}  // namespace

std::string yaml_text(const std::string& s) {
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
