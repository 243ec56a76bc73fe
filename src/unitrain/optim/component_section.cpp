#include "unitrain/optim/component_section.h"

namespace unitrain {

Config resolve_component_section(const Config& section, const std::string& kind,
                                 const std::string& default_type,
                                 std::shared_ptr<const Schema> extra) {
  // A one-field wrapper schema named like the section's last key, resolved at its parent path,
  // so the core resolver (unknown keys, defaults, component args) does all the work.
  const std::string& path = section.path();
  const size_t dot = path.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  const std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
  Schema wrapper;
  wrapper.add(name, Type::Section).component(kind, default_type).section(std::move(extra));
  YAML::Node in(YAML::NodeType::Map);
  in[name] = section.node();
  YAML::Node out(YAML::NodeType::Map);
  wrapper.resolve_node(in, out, parent);
  return Config(out[name], path);
}

}  // namespace unitrain
