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
  Duration,  ///< a TrainUnit: "10 epochs", "500 steps", "20000 samples"
  IntList,
  FloatList,
  StringList,
  Section,      ///< a nested map described by section()
  SectionList,  ///< a list of maps, each described by section()
  Any,          ///< free-form YAML, not validated (user keys)
};

const char* type_name(Type t);

/// What a resumed run may do with a key whose value differs from the checkpoint's config.
enum class OnResume {
  Free,      ///< may change; the change applies from the resume on (a finished run is not
             ///< re-opened for it: that would train nothing)
  Harmless,  ///< may change and changes nothing trained (logging, checkpoint
             ///< writing): a finished run stays finished
  Fixed,     ///< may not change: the checkpoint's state depends on it; the resume is refused
};
const char* on_resume_name(OnResume r);  ///< "free", "harmless", "fixed"

/// A key's resume class, and for Fixed keys why (ends the refusal's "but ..." sentence).
struct ResumeRule {
  OnResume on = OnResume::Free;
  std::string why;
};

/// One declared key. Setters chain: `s.add("lr", Type::Float).def(1e-3).gt(0).help("...")`.
class Field {
 public:
  Field(std::string name, Type type) : name_(std::move(name)), type_(type) {}

  Field& def(const char* yaml) {
    default_ = std::string(yaml);
    return *this;
  }
  Field& def(const std::string& yaml) {
    default_ = yaml;
    return *this;
  }
  Field& def(double v);
  Field& def(int v) { return def(static_cast<int64_t>(v)); }
  Field& def(int64_t v);
  Field& def(bool v) {
    default_ = v ? "true" : "false";
    return *this;
  }
  Field& min(double v) {
    min_ = v;
    return *this;
  }  ///< value >= v
  Field& gt(double v) {
    min_ = v;
    min_exclusive_ = true;
    return *this;
  }  ///< value > v
  Field& max(double v) {
    max_ = v;
    return *this;
  }  ///< value <= v
  Field& lt(double v) {
    max_ = v;
    max_exclusive_ = true;
    return *this;
  }  ///< value < v
  Field& choices(std::vector<std::string> c) {
    choices_ = std::move(c);
    return *this;
  }
  /// The values allowed (choices()); empty when any value of the type is.
  const std::vector<std::string>& choice_list() const { return choices_; }
  Field& help(std::string h) {
    help_ = std::move(h);
    return *this;
  }
  /// null is allowed: the default without def(); with def(), an explicit null stays null.
  Field& nullable() {
    nullable_ = true;
    return *this;
  }
  /// No default: the key must be given (also clears nullable()).
  Field& required() {
    default_.reset();
    nullable_ = false;
    return *this;
  }
  /// The word `auto` is accepted besides values of the type (then it is the default): options
  /// bound to a struct read it as the struct's default (e.g. threads: auto = 0).
  Field& or_auto() {
    or_auto_ = true;
    default_ = "auto";
    return *this;
  }
  /// Resume classes (see OnResume). A key without one takes its section's; the root's is free.
  /// `why` completes "cannot resume: <key> changed ..., but <why>".
  Field& fixed(std::string why) {
    resume_ = ResumeRule{OnResume::Fixed, std::move(why)};
    return *this;
  }
  Field& free() {
    resume_ = ResumeRule{OnResume::Free, ""};
    return *this;
  }
  Field& harmless() {
    resume_ = ResumeRule{OnResume::Harmless, ""};
    return *this;
  }
  /// A component section whose `type` is fixed on resume while its args follow the section.
  Field& fixed_type(std::string why) {
    type_resume_ = ResumeRule{OnResume::Fixed, std::move(why)};
    return *this;
  }
  /// Nested keys of a Section or of each element of a SectionList.
  Field& section(std::shared_ptr<const Schema> s) {
    section_ = std::move(s);
    return *this;
  }
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
  bool accepts_auto() const { return or_auto_; }
  const std::optional<ResumeRule>& resume_rule() const { return resume_; }
  const std::optional<ResumeRule>& type_resume_rule() const { return type_resume_; }
  /// type_name(), with " or auto" when or_auto().
  std::string type_text() const;
  /// "> 0", "[0, 1]", "one of: a, b", or "" when unconstrained.
  std::string allowed() const;

  /// Validates one scalar or list value (not sections); throws ConfigError naming `key`.
  void check_value(const YAML::Node& value, const std::string& key) const;

 private:
  void check_number(double v, const std::string& key, const std::string& text) const;
  /// check_value of one scalar `node` of type `t` (this field's, or its lists' elements').
  void check_scalar(const YAML::Node& node, const std::string& key, Type t) const;
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
  bool or_auto_ = false;
  std::optional<ResumeRule> resume_, type_resume_;
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

  /// Markdown table rows of this schema's keys (recursing into sections), key paths under
  /// `prefix`. With `resume`, a column says whether each key may change on resume (keys without
  /// a class of their own take `resume`'s); without, that column is left out.
  std::string markdown(const std::string& prefix,
                       std::optional<ResumeRule> resume = std::nullopt) const;

  /// The resume class of dotted `key` (`data.loader.batch_size`, `objective.losses.0.weight`,
  /// `model.args.sizes`): the class of the deepest declared key on its path, else free. Keys of
  /// a component's `args` and of free-form (Any) sections take their section's class.
  ResumeRule resume_rule(const std::string& key) const;

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
