#pragma once
// Schema: every config key declared once with its type, default, allowed range and help.
// The same declarations validate configs, fill defaults and generate docs/config.md.
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unitrain/core/config.h"

namespace unitrain {

class Schema;

enum class Type {
  Bool,
  Int,
  Float,
  String,
  Duration,     ///< a TrainUnit: "10 epochs", "500 steps", "20000 samples"
  IntList,
  FloatList,
  StringList,
  Section,      ///< a nested map described by section()
  SectionList,  ///< a list of maps, each described by section()
  Any,          ///< free-form YAML, not validated (user keys)
};

const char* type_name(Type t);

/// One declared key. Setters chain: `s.add("lr", Type::Float).def(1e-3).gt(0).help("...")`.
class Field {
 public:
  Field(std::string name, Type type) : name_(std::move(name)), type_(type) {}

  Field& def(const char* yaml) { default_ = std::string(yaml); return *this; }
  Field& def(const std::string& yaml) { default_ = yaml; return *this; }
  Field& def(double v);
  Field& def(int v) { return def(static_cast<int64_t>(v)); }
  Field& def(int64_t v);
  Field& def(bool v) { default_ = v ? "true" : "false"; return *this; }
  Field& min(double v) { min_ = v; return *this; }  ///< value >= v
  Field& gt(double v) { min_ = v; min_exclusive_ = true; return *this; }  ///< value > v
  Field& max(double v) { max_ = v; return *this; }  ///< value <= v
  Field& lt(double v) { max_ = v; max_exclusive_ = true; return *this; }  ///< value < v
  Field& choices(std::vector<std::string> c) { choices_ = std::move(c); return *this; }
  Field& help(std::string h) { help_ = std::move(h); return *this; }
  /// null is allowed: the default without def(); with def(), an explicit null stays null.
  Field& nullable() { nullable_ = true; return *this; }
  /// Nested keys of a Section or of each element of a SectionList.
  Field& section(std::shared_ptr<const Schema> s) { section_ = std::move(s); return *this; }
  /// The section picks a registered component: its `type` key names one of `kind`, and its
  /// `args` key is validated against that component's schema. `default_type` may be empty
  /// (then `type` is required).
  Field& component(std::string kind, std::string default_type = "");

  const std::string& name() const { return name_; }
  Type type() const { return type_; }
  const std::optional<std::string>& default_yaml() const { return default_; }
  const std::string& help_text() const { return help_; }
  const std::string& component_kind() const { return component_kind_; }
  const std::string& default_type() const { return default_type_; }
  const std::shared_ptr<const Schema>& section_schema() const { return section_; }
  bool is_nullable() const { return nullable_; }
  /// "> 0", "[0, 1]", "one of: a, b", or "" when unconstrained.
  std::string allowed() const;

  /// Validates one scalar or list value (not sections); throws ConfigError naming `key`.
  void check_value(const YAML::Node& value, const std::string& key) const;

 private:
  void check_number(double v, const std::string& key, const std::string& text) const;
  std::string name_;
  Type type_;
  std::optional<std::string> default_;
  double min_ = -std::numeric_limits<double>::infinity();
  double max_ = std::numeric_limits<double>::infinity();
  bool min_exclusive_ = false;
  bool max_exclusive_ = false;
  std::vector<std::string> choices_;
  std::string help_;
  bool nullable_ = false;
  std::shared_ptr<const Schema> section_;
  std::string component_kind_;
  std::string default_type_;
};

/// An ordered set of Fields describing one config section.
class Schema {
 public:
  Field& add(const std::string& name, Type type);
  const std::deque<Field>& fields() const { return fields_; }
  const Field* find(const std::string& name) const;

  /// Returns a copy of `in` with every default filled in and every value checked: unknown keys
  /// (with a "did you mean"), wrong types, out-of-range values, unknown components (listing
  /// the registered ones) and missing required keys all throw ConfigError naming the key path.
  Config resolve(const Config& in) const;

  /// Markdown tables of this schema's keys (recursing into sections), key paths under `prefix`.
  std::string markdown(const std::string& prefix) const;

  /// resolve() on raw YAML, writing into `out`, key paths under `path`.
  void resolve_node(const YAML::Node& in, YAML::Node& out, const std::string& path) const;

 private:
  std::deque<Field> fields_;
};

/// Resolves a component section `{type: name, args: {...}}` of `kind` in place.
void resolve_component(const std::string& kind, const std::string& default_type,
                       const YAML::Node& in, YAML::Node& out, const std::string& path);

/// The closest of `candidates` to `word` when it is a plausible typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace unitrain
