#pragma once
// What the schema's two halves (schema.cpp: the fields and their checks; schema_resolve.cpp: a
// config resolved against them) say alike in messages. Private to them.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace unitrain::schema_text {

inline std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

/// A YAML value as a message names it: null, 'the scalar', a list, a section.
inline std::string describe_node(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  return "a section";
}

}  // namespace unitrain::schema_text
