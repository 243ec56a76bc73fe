#include "unitrain/core/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/core/schema_text.h"

namespace unitrain {
namespace {

using schema_text::describe_node;
using schema_text::join;

// The shortest text that reads back as `v`, as people write it: 0.1, 1e-08, 100.
std::string format_number(double v) { return fmt::format("{}", v); }

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "int";
    case Type::Float:
      return "float";
    case Type::String:
      return "string";
    case Type::Duration:
      return "duration";
    case Type::IntList:
      return "list of int";
    case Type::FloatList:
      return "list of float";
    case Type::StringList:
      return "list of string";
    case Type::Section:
      return "section";
    case Type::SectionList:
      return "list of sections";
    case Type::Any:
      return "any";
  }
  return "?";
}

const char* on_resume_name(OnResume r) {
  switch (r) {
    case OnResume::Free:
      return "free";
    case OnResume::Harmless:
      return "harmless";
    case OnResume::Fixed:
      return "fixed";
  }
  return "?";
}

std::string Field::type_text() const {
  return std::string(type_name(type_)) + (or_auto_ ? " or auto" : "");
}

Field& Field::def(double v) {
  // Shortest round-trip text (0.1, not 0.10000000000000001), with a '.' so that every YAML
  // reader (1.1 too) takes it as a float: 100 -> 100.0, 1e-07 -> 1.0e-07.
  std::string s = format_number(v);
  if (std::isfinite(v) && s.find('.') == std::string::npos) {
    const size_t e = s.find('e');
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  default_ = s;
  return *this;
}

Field& Field::def(int64_t v) {
  default_ = std::to_string(v);
  return *this;
}

Field& Field::component(std::string kind, std::string default_type) {
  component_kind_ = std::move(kind);
  default_type_ = std::move(default_type);
  return *this;
}

std::string Field::allowed() const {
  std::vector<std::string> parts;
  if (!choices_.empty()) parts.push_back("one of: " + join(choices_, ", "));
  bool has_min = std::isfinite(min_), has_max = std::isfinite(max_);
  if (has_min && has_max) {
    parts.push_back((min_exclusive_ ? "(" : "[") + format_number(min_) + ", " +
                    format_number(max_) + (max_exclusive_ ? ")" : "]"));
  } else if (has_min) {
    parts.push_back((min_exclusive_ ? "> " : ">= ") + format_number(min_));
  } else if (has_max) {
    parts.push_back((max_exclusive_ ? "< " : "<= ") + format_number(max_));
  }
  if (!component_kind_.empty()) parts.push_back("a registered " + component_kind_);
  if (or_auto_ && !parts.empty()) parts[0] = "auto or " + parts[0];
  return join(parts, "; ");
}

void Field::check_number(double v, const std::string& key, const std::string& text) const {
  bool ok_min = min_exclusive_ ? v > min_ : v >= min_;
  bool ok_max = max_exclusive_ ? v < max_ : v <= max_;
  UT_CHECK(ok_min && ok_max, key, " must be ", allowed(), ", got ", text);
}

void Field::check_scalar(const YAML::Node& node, const std::string& key, Type t) const {
  const std::string expected = t == type_ ? type_text() : type_name(t);
  UT_CHECK(node.IsScalar(), key, ": expected ", expected, ", got ", describe_node(node));
  const std::string& text = node.Scalar();
  try {
    switch (t) {
      case Type::Bool:
        node.as<bool>();
        break;
      case Type::Int:
        check_number(static_cast<double>(node.as<int64_t>()), key, text);
        break;
      case Type::Float:
        check_number(node.as<double>(), key, text);
        break;
      case Type::Duration:
        TrainUnit::parse(text, key);
        break;
      default:
        break;
    }
  } catch (const YAML::Exception&) {
    std::string hint;
    if (t == Type::Int) {
      try {
        node.as<double>();  // a number, but not a whole one as written: 1e3, 2.0
        hint = " (write a whole number, e.g. 1000)";
      } catch (const YAML::Exception&) {
      }
    }
    throw ConfigError(
        detail::concat(key, ": expected ", expected, ", got ", describe_node(node), hint));
  }
  if (!choices_.empty()) {
    UT_CHECK(std::find(choices_.begin(), choices_.end(), text) != choices_.end(), key, ": '", text,
             "' is not one of: ", join(choices_, ", "));
  }
}

void Field::check_value(const YAML::Node& value, const std::string& key) const {
  if (or_auto_ && value.IsScalar() && value.Scalar() == "auto") return;
  switch (type_) {
    case Type::IntList:
    case Type::FloatList:
    case Type::StringList: {
      Type element = type_ == Type::IntList     ? Type::Int
                     : type_ == Type::FloatList ? Type::Float
                                                : Type::String;
      const char* example = type_ == Type::IntList     ? "[1, 2]"
                            : type_ == Type::FloatList ? "[0.5, 1.0]"
                                                       : "[a, b]";
      UT_CHECK(value.IsSequence(), key, ": expected a ", type_name(type_), " such as ", example,
               ", got ", describe_node(value));
      for (size_t i = 0; i < value.size(); ++i) {
        check_scalar(value[i], key + "[" + std::to_string(i) + "]", element);
      }
      return;
    }
    case Type::Section:
    case Type::SectionList:
    case Type::Any:
      return;
    default:
      check_scalar(value, key, type_);
  }
}

Field& Schema::add(const std::string& name, Type type) {
  for (const auto& f : fields_) {
    if (f.name() == name) throw ConfigError("schema declares key '" + name + "' twice");
  }
  fields_.emplace_back(name, type);
  return fields_.back();
}

const Field* Schema::find(const std::string& name) const {
  for (const auto& f : fields_) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

}  // namespace unitrain
