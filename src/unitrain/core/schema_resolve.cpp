// A config resolved against a schema: unknown keys named (with the closest known one), each
// field's value checked and its default filled, component sections resolved by their type's
// own schema.
#include <algorithm>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/core/schema.h"
#include "unitrain/core/schema_text.h"

namespace unitrain {
namespace {

using schema_text::describe_node;
using schema_text::join;

YAML::Node parse_default(const std::string& yaml) {
  YAML::Node node = YAML::Load(yaml);
  if (!node.IsDefined()) node = YAML::Node(YAML::NodeType::Null);
  return node;
}

std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool absent(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

/// The keys at the top of the config being resolved (set while a root schema resolves), so
/// that a top-level section written inside another (`train.early_stopping`) is pointed to.
thread_local const std::vector<std::string>* top_level_keys = nullptr;

// Checks every key of `in` is one of `known`; else names the key with a suggestion.
void check_known_keys(const YAML::Node& in, const std::vector<std::string>& known,
                      const std::string& path) {
  if (!in.IsDefined() || !in.IsMap()) return;
  for (const auto& kv : in) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string hint = closest_match(key, known);
    const bool top =
        hint.empty() && !path.empty() && top_level_keys != nullptr &&
        std::find(top_level_keys->begin(), top_level_keys->end(), key) != top_level_keys->end();
    UT_CHECK(!top, "unknown key '", join_path(path, key), "': ", key,
             " is a key of the config's top level, not of ", path, " (on the command line: --", key,
             "...)");
    throw ConfigError(
        detail::concat("unknown key '", join_path(path, key), "'",
                       hint.empty() ? "" : "; did you mean '" + join_path(path, hint) + "'?",
                       known.empty() ? std::string("; this section takes no keys")
                                     : "; known keys here: " + join(known, ", ")));
  }
}

/// `explicit_null`: the key is written as null (not just absent).
void resolve_field(const Field& f, const YAML::Node& in, YAML::Node& out, const std::string& path,
                   bool explicit_null);

// Resolves a section that may be a component ({type, args, ...other declared keys}).
void resolve_section(const Field& f, const YAML::Node& in, YAML::Node& out,
                     const std::string& path) {
  UT_CHECK(!in.IsDefined() || in.IsNull() || in.IsMap(), path,
           ": expected a section (a map of keys), got ", describe_node(in));
  if (f.component_kind().empty()) {
    f.section_schema()->resolve_node(in, out, path);
    return;
  }
  std::vector<std::string> known = {"type", "args"};
  if (f.section_schema()) {
    for (const auto& sub : f.section_schema()->fields()) known.push_back(sub.name());
  }
  check_known_keys(in, known, path);
  resolve_component(f.component_kind(), f.default_type(), in, out, path);
  if (f.section_schema()) {
    YAML::Node rest(YAML::NodeType::Map);
    if (in.IsDefined() && in.IsMap()) {
      for (const auto& kv : in) {
        const std::string key = kv.first.as<std::string>();
        if (key != "type" && key != "args") rest[key] = kv.second;
      }
    }
    YAML::Node resolved(YAML::NodeType::Map);
    f.section_schema()->resolve_node(rest, resolved, path);
    for (const auto& kv : resolved) out[kv.first.as<std::string>()] = kv.second;
  }
}

// Resolves a list of sections (absent: []), each item as resolve_section at `path`.<index>.
void resolve_section_list(const Field& f, const YAML::Node& value, YAML::Node& out,
                          const std::string& path) {
  if (absent(value)) {
    out = YAML::Node(YAML::NodeType::Sequence);
    return;
  }
  UT_CHECK(value.IsSequence(), path, ": expected a list of sections, got ", describe_node(value));
  out = YAML::Node(YAML::NodeType::Sequence);
  for (size_t i = 0; i < value.size(); ++i) {
    YAML::Node item(YAML::NodeType::Map);
    resolve_section(f, value[i], item, path + "." + std::to_string(i));
    out.push_back(item);
  }
}

void resolve_field(const Field& f, const YAML::Node& in, YAML::Node& out, const std::string& path,
                   bool explicit_null) {
  // reset(), not operator=: `in` may be a zombie node of a missing key, and assigning to one
  // throws (yaml-cpp reference semantics).
  YAML::Node value;
  if (in.IsDefined()) value.reset(in);
  if (absent(value) && f.type() != Type::Section && f.type() != Type::SectionList) {
    if (f.is_nullable() && explicit_null) {
      out = YAML::Node(YAML::NodeType::Null);  // an explicit null wins over the default
      return;
    }
    if (f.default_yaml()) {
      value.reset(parse_default(*f.default_yaml()));
    } else if (f.is_nullable()) {
      out = YAML::Node(YAML::NodeType::Null);
      return;
    } else {
      throw ConfigError(detail::concat("missing required key ", path,
                                       f.help_text().empty() ? "" : " (" + f.help_text() + ")"));
    }
  }
  switch (f.type()) {
    case Type::Section: {
      if (absent(value) && f.is_nullable()) {
        out = YAML::Node(YAML::NodeType::Null);
        return;
      }
      out = YAML::Node(YAML::NodeType::Map);
      resolve_section(f, value, out, path);
      return;
    }
    case Type::SectionList:
      resolve_section_list(f, value, out, path);
      return;
    case Type::Any:
      out = YAML::Clone(value);
      return;
    case Type::Duration:
      f.check_value(value, path);
      if (f.accepts_auto() && value.Scalar() == "auto") {
        out = YAML::Node("auto");
        return;
      }
      out = YAML::Node(TrainUnit::parse(value.Scalar(), path).str());
      return;
    default:
      if (absent(value)) {
        out = YAML::Node(YAML::NodeType::Null);
        return;
      }
      f.check_value(value, path);
      out = YAML::Clone(value);
      return;
  }
}

}  // namespace

Config Schema::resolve(const Config& in) const {
  YAML::Node out(YAML::NodeType::Map);
  resolve_node(in.node(), out, in.path());
  Config resolved(out, in.path());
  resolved.share_reads(in);  // a key read from the resolved copy was read from `in`
  return resolved;
}

void Schema::resolve_node(const YAML::Node& in, YAML::Node& out, const std::string& path) const {
  UT_CHECK(!in.IsDefined() || in.IsNull() || in.IsMap(), path.empty() ? "config" : path,
           ": expected a section (a map of keys), got ", describe_node(in));
  std::vector<std::string> known;
  for (const auto& f : fields_) known.push_back(f.name());
  check_known_keys(in, known, path);
  // The root's keys, for the sections below it (restored after: schemas resolve others inside).
  const std::vector<std::string>* outer_top = top_level_keys;
  if (path.empty()) top_level_keys = &known;
  struct Restore {
    const std::vector<std::string>* keys;
    ~Restore() { top_level_keys = keys; }
  } restore{outer_top};
  for (const auto& f : fields_) {
    const bool is_map = in.IsDefined() && in.IsMap();
    YAML::Node value = is_map ? YAML::Node(in[f.name()]) : YAML::Node();
    YAML::Node resolved;
    resolve_field(f, value, resolved, join_path(path, f.name()),
                  is_map && value.IsDefined() && value.IsNull());
    out[f.name()] = resolved;
  }
}

void resolve_component(const std::string& kind, const std::string& default_type,
                       const YAML::Node& in, YAML::Node& out, const std::string& path) {
  std::string type = default_type;
  if (in.IsDefined() && in.IsMap() && !absent(in["type"])) {
    UT_CHECK(in["type"].IsScalar(), path, ".type: expected a name, got ",
             describe_node(in["type"]));
    type = in["type"].Scalar();
  }
  if (type.empty()) {
    std::vector<std::string> names;
    for (const auto* info : catalog::of_kind(kind)) names.push_back(info->name);
    throw ConfigError(detail::concat("missing required key ", path, ".type (the ", kind,
                                     " to use; known: ", join(names, ", "), ")"));
  }
  const std::string type_key = path + ".type";
  const ComponentInfo& info = catalog::find(kind, type, type_key);
  out["type"] = type;
  YAML::Node args = (in.IsDefined() && in.IsMap()) ? YAML::Node(in["args"]) : YAML::Node();
  YAML::Node resolved(YAML::NodeType::Map);
  info.args->resolve_node(args, resolved, path + ".args");
  out["args"] = resolved;
}

}  // namespace unitrain
