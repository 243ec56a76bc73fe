#include "unitrain/report/config_diff.h"

#include <yaml-cpp/yaml.h>

#include <map>

namespace unitrain::report {
namespace {

bool all_plain(const YAML::Node& seq) {
  for (const auto& item : seq) {
    if (!item.IsScalar() && !item.IsNull()) return false;
  }
  return true;
}

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

void flatten_into(const YAML::Node& node, const std::string& key, FlatConfig& out) {
  const auto child_key = [&key](const std::string& k) { return key.empty() ? k : key + "." + k; };
  if (node.IsMap() && node.size() > 0) {
    for (const auto& kv : node) flatten_into(kv.second, child_key(kv.first.as<std::string>()), out);
  } else if (node.IsSequence() && !all_plain(node)) {
    for (size_t i = 0; i < node.size(); ++i)
      flatten_into(node[i], child_key(std::to_string(i)), out);
  } else if (node.IsScalar()) {
    out.emplace_back(key, node.Scalar());
  } else if (!node.IsDefined() || node.IsNull()) {
    out.emplace_back(key, "null");
  } else {
    out.emplace_back(key, flow_text(node));  // [a, b], {}
  }
}

}  // namespace

FlatConfig flatten_config(const Config& config) {
  FlatConfig out;
  flatten_into(config.node(), "", out);
  return out;
}

std::vector<ConfigRow> compare_configs(const std::vector<FlatConfig>& configs) {
  std::vector<ConfigRow> rows;
  std::map<std::string, size_t> index;
  for (size_t run = 0; run < configs.size(); ++run) {
    for (const auto& [key, value] : configs[run]) {
      auto [it, added] = index.emplace(key, rows.size());
      if (added) rows.push_back({key, std::vector<std::optional<std::string>>(configs.size())});
      rows[it->second].values[run] = value;
    }
  }
  for (auto& row : rows) {
    for (const auto& v : row.values) row.differs |= v != row.values.front();
  }
  return rows;
}

}  // namespace unitrain::report
