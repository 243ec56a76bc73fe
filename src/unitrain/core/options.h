#pragma once
// Options<T>: every config key declared once, next to the field of T it fills. That one
// declaration gives the Schema (validation, defaults, docs/config.md, completion, resume classes)
// and the parsing of a section into T.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/schema.h"
#include "unitrain/core/train_unit.h"

namespace unitrain {

template <typename T>
class Options;
template <typename T>
const Options<T>& options_of();

/// The config names of an enum's (or any comparable member's) values:
/// `{{"stop", OnNonFinite::Stop}, {"skip", OnNonFinite::Skip}}`, `{{"min", false}, {"max", true}}`.
template <typename E>
using EnumNames = std::vector<std::pair<std::string, E>>;

namespace option_detail {

// YAML text of a default (plain when it reads back as itself, else single-quoted).
std::string yaml_text(const std::string& s);
std::string yaml_text(const std::vector<int64_t>& v);
std::string yaml_text(const std::vector<double>& v);
std::string yaml_text(const std::vector<std::string>& v);
// ConfigError naming `key`: `name` is not one of `names` (cannot happen after resolve()).
[[noreturn]] void throw_unknown_name(const std::string& key, const std::string& name);

/// How a member type maps to a config Type, declares its default and is read. A member type
/// without a specialisation does not compile: add one here.
template <typename M, typename = void>
struct Traits;

template <>
struct Traits<bool> {
  static constexpr Type type = Type::Bool;
  static void set_default(Field& f, bool v) { f.def(v); }
  static bool read(const Config& c, const std::string& k) { return c.get_bool(k); }
};
template <typename M>
struct Traits<M, std::enable_if_t<std::is_integral_v<M> && !std::is_same_v<M, bool>>> {
  static constexpr Type type = Type::Int;
  static void set_default(Field& f, M v) {
    f.def(static_cast<int64_t>(v));
    if (std::is_unsigned_v<M>) f.min(0);
  }
  static M read(const Config& c, const std::string& k) { return static_cast<M>(c.get_int(k)); }
};
template <>
struct Traits<double> {
  static constexpr Type type = Type::Float;
  static void set_default(Field& f, double v) { f.def(v); }
  static double read(const Config& c, const std::string& k) { return c.get_double(k); }
};
template <>
struct Traits<std::string> {
  static constexpr Type type = Type::String;
  // An empty string default is written null: "not set".
  static void set_default(Field& f, const std::string& v) {
    v.empty() ? f.nullable() : f.def(yaml_text(v));
  }
  static std::string read(const Config& c, const std::string& k) { return c.get_string(k); }
};
template <>
struct Traits<TrainUnit> {
  static constexpr Type type = Type::Duration;
  static void set_default(Field& f, const TrainUnit& v) { f.def(v.str()); }
  static TrainUnit read(const Config& c, const std::string& k) { return c.get_duration(k); }
};
template <typename E, Type ListType, typename Get>
struct ListTraits {
  static constexpr Type type = ListType;
  static void set_default(Field& f, const std::vector<E>& v) { f.def(yaml_text(v)); }
  static std::vector<E> read(const Config& c, const std::string& k) { return (c.*Get::get)(k); }
};
struct GetInts {
  static constexpr auto get = &Config::get_int_list;
};
struct GetFloats {
  static constexpr auto get = &Config::get_double_list;
};
struct GetStrings {
  static constexpr auto get = &Config::get_string_list;
};
template <>
struct Traits<std::vector<int64_t>> : ListTraits<int64_t, Type::IntList, GetInts> {};
template <>
struct Traits<std::vector<double>> : ListTraits<double, Type::FloatList, GetFloats> {};
template <>
struct Traits<std::vector<std::string>> : ListTraits<std::string, Type::StringList, GetStrings> {};
/// std::optional<M>: nullable; unset (null) is the default when the struct leaves it unset.
template <typename M>
struct Traits<std::optional<M>> {
  static constexpr Type type = Traits<M>::type;
  static void set_default(Field& f, const std::optional<M>& v) {
    f.nullable();
    if (v) Traits<M>::set_default(f, *v);
  }
  static std::optional<M> read(const Config& c, const std::string& k) {
    return c.has(k) ? std::optional<M>(Traits<M>::read(c, k)) : std::nullopt;
  }
};

template <typename M>
constexpr bool kIsOptional = false;
template <typename M>
constexpr bool kIsOptional<std::optional<M>> = true;

}  // namespace option_detail

/// The declared keys of options struct T, each bound to the member it fills. Declare them in
/// `static void T::declare(Options<T>& o)`, one line a key:
///
///   o.field("keep_last", &CheckpointOptions::keep_last).min(0).harmless().help("...");
///
/// field() deduces the config type from the member's C++ type (bool, integers, double,
/// std::string, TrainUnit, std::vector of int64_t/double/std::string, std::optional of those =
/// nullable; enums with an EnumNames table) and takes the default from the struct's own
/// default member initializer (an empty string and an unset optional are written null). The
/// returned Field sets range, choices, help, `required()`, `or_auto()` and the resume class.
/// Rules that span keys go in check(). options_of<T>() builds the set once; parse() resolves a
/// section against the schema (unknown keys with a "did you mean", types, ranges, defaults)
/// and reads it into a copy of the struct's defaults.
template <typename T>
class Options {
 public:
  using Check = std::function<void(T&, const Config&)>;

  Options() : Options(T{}) {}
  /// For a struct without a default constructor: the defaults are `prototype`'s fields.
  explicit Options(T prototype)
      : schema_(std::make_shared<Schema>()),
        prototype_(std::make_shared<const T>(std::move(prototype))) {}

  /// `member` may be a member of a base of T (args shared by several components: a schedule's
  /// `warmup`).
  template <typename M, typename Owner>
  Field& field(const std::string& name, M Owner::*owner_member) {
    static_assert(std::is_base_of_v<Owner, T>, "field(): not a member of T or of a base of T");
    M T::*member = owner_member;
    using Traits = option_detail::Traits<M>;
    Field& f = schema_->add(name, Traits::type);
    Traits::set_default(f, (*prototype_).*member);
    readers_.push_back([&f, name, member](T& out, const Config& c) {
      if (keeps_default(f, c, name, option_detail::kIsOptional<M>)) return;
      out.*member = Traits::read(c, name);
    });
    return f;
  }

  template <typename E>
  Field& field(const std::string& name, E T::*member, EnumNames<E> names) {
    Field& f = schema_->add(name, Type::String);
    std::vector<std::string> choices;
    for (const auto& [text, value] : names) {
      choices.push_back(text);
      if (value == (*prototype_).*member) f.def(option_detail::yaml_text(text));
    }
    f.choices(choices);
    readers_.push_back([&f, name, member, names](T& out, const Config& c) {
      if (keeps_default(f, c, name, false)) return;
      const std::string text = c.get_string(name);
      for (const auto& [n, value] : names) {
        if (n == text) return void(out.*member = value);
      }
      option_detail::throw_unknown_name(c.key_path(name), text);
    });
    return f;
  }

  /// A field() that also accepts the word `auto` (or_auto(): the member keeps its default) and
  /// records in `is_auto` whether the value was `auto`, for a check() that resolves it.
  template <typename M>
  Field& field_or_auto(const std::string& name, M T::*member, bool T::*is_auto) {
    Field& f = field(name, member).or_auto();
    readers_.push_back(
        [&f, name, is_auto](T& out, const Config& c) { out.*is_auto = says_auto(f, c, name); });
    return f;
  }

  /// A declared key no field receives as is: a check() reads it (e.g. `mode: auto` resolved
  /// with another key).
  Field& key(const std::string& name, Type type) { return schema_->add(name, type); }

  /// A declared key kept whole in `member`: the resolved section (or free-form YAML) at its key
  /// path, null kept as null, for what takes it as it is, e.g. a component section
  /// ({type, args, ...}) its registry builds from. Chain component(), section(), ...
  Field& key(const std::string& name, Type type, Config T::*member) {
    Field& f = key(name, type);
    readers_.push_back([name, member](T& out, const Config& c) {
      if (c.node().IsMap() && c.node()[name].IsDefined()) out.*member = c.at(name);
    });
    return f;
  }

  /// The same for a nullable key: `member` is unset when it is absent or null.
  Field& key(const std::string& name, Type type, std::optional<Config> T::*member) {
    Field& f = key(name, type);
    readers_.push_back([name, member](T& out, const Config& c) {
      out.*member = c.has(name) ? std::optional<Config>(c.at(name)) : std::nullopt;
    });
    return f;
  }

  /// A list of sections (Type::SectionList) kept whole in `member`, one Config an entry, in
  /// order (e.g. component sections, each built by its registry).
  Field& key(const std::string& name, Type type, std::vector<Config> T::*member) {
    Field& f = key(name, type);
    readers_.push_back([name, member](T& out, const Config& c) { out.*member = c.list(name); });
    return f;
  }

  /// A nested section `name` whose keys fill fields of the same T (`checkpoint.best.metric`
  /// -> CheckpointOptions::best_metric). Returns its Options to declare them in.
  Options<T>& group(const std::string& name, const std::string& help) {
    auto child = std::shared_ptr<Options<T>>(new Options<T>(prototype_));
    schema_->add(name, Type::Section).section(child->schema_).help(help);
    readers_.push_back([child, name](T& out, const Config& c) { child->read(out, c.at(name)); });
    return *child;
  }

  /// A nested section `name` filling member struct M, whose keys M declares itself
  /// (options_of<M>(); their defaults are M's own).
  template <typename M>
  Field& section(const std::string& name, M T::*member) {
    const Options<M>& sub = options_of<M>();
    Field& f = schema_->add(name, Type::Section).section(sub.schema());
    readers_.push_back(
        [&sub, name, member](T& out, const Config& c) { sub.read(out.*member, c.at(name)); });
    return f;
  }

  /// A nullable section `name` filling optional member M (null = unset), keys declared by M.
  template <typename M>
  Field& section(const std::string& name, std::optional<M> T::*member) {
    const Options<M>& sub = options_of<M>();
    Field& f = schema_->add(name, Type::Section).section(sub.schema()).nullable();
    readers_.push_back([&sub, name, member](T& out, const Config& c) {
      out.*member = c.has(name) ? std::optional<M>(sub.read_resolved(c.at(name))) : std::nullopt;
    });
    return f;
  }

  /// A list of sections `name` filling member vector of M, each entry's keys declared by M
  /// (chain component() when each entry is a component section: `{type, args, ...}`).
  template <typename M>
  Field& sections(const std::string& name, std::vector<M> T::*member) {
    const Options<M>& sub = options_of<M>();
    Field& f = schema_->add(name, Type::SectionList).section(sub.schema());
    readers_.push_back([&sub, name, member](T& out, const Config& c) {
      (out.*member).clear();
      for (const Config& entry : c.list(name)) (out.*member).push_back(sub.read_resolved(entry));
    });
    return f;
  }

  /// Runs after the fields are read, with the resolved section (for key paths in errors).
  void check(Check f) { checks_.push_back(std::move(f)); }

  std::shared_ptr<const Schema> schema() const { return schema_; }

  /// `section` (raw or already resolved) resolved against schema() and read into a copy of
  /// the defaults; ConfigError naming the key on any bad value.
  T parse(const Config& section) const { return read_resolved(schema_->resolve(section)); }

  /// The fields of a section already resolved by a schema that declares these keys among
  /// others (a component section: `type` and `args` beside them), checks included.
  T read_resolved(const Config& resolved) const {
    T out = *prototype_;
    read(out, resolved);
    return out;
  }

 private:
  template <typename U>
  friend class Options;

  explicit Options(std::shared_ptr<const T> prototype)
      : schema_(std::make_shared<Schema>()), prototype_(std::move(prototype)) {}

  // Null (where allowed) or `auto` leave the default; an optional reads null itself.
  static bool keeps_default(const Field& f, const Config& c, const std::string& name,
                            bool optional) {
    if (!optional && !c.has(name)) return true;
    return says_auto(f, c, name);
  }

  // The key accepts `auto` (or_auto()) and its value is that word: an explicit `auto` was
  // read (it chose the default), so it is never reported as unread.
  static bool says_auto(const Field& f, const Config& c, const std::string& name) {
    if (!f.accepts_auto() || !c.has(name)) return false;
    const YAML::Node node = c.node()[name];
    const bool is_auto = node.IsScalar() && node.Scalar() == "auto";
    if (is_auto) c.mark_read(name);
    return is_auto;
  }

  void read(T& out, const Config& resolved) const {
    for (const auto& r : readers_) r(out, resolved);
    for (const auto& c : checks_) c(out, resolved);
  }

  std::shared_ptr<Schema> schema_;
  std::shared_ptr<const T> prototype_;
  std::vector<std::function<void(T&, const Config&)>> readers_;
  std::vector<Check> checks_;
};

/// Key -> a string (a file, an array or dataset name, a dtype, a prefix), in the config's order.
using NamedStrings = std::vector<std::pair<std::string, std::string>>;

/// The string map at `key` of a resolved section ({} when absent or null), in file order;
/// ConfigError naming the key path when it is not a map of strings (`example` shows one).
NamedStrings string_map_of(const Config& section, const std::string& key,
                           const std::string& example);

/// Declares key `name` of options struct T: a map key -> string (YAML `{x: a, y: b}`), read
/// into `member` in the file's order; ConfigError naming the key path when it is not such a map
/// (`example` shows one). Returns the Field for def(), nullable(), help() and the resume class.
template <typename T>
Field& declare_named_strings(Options<T>& o, const std::string& name, NamedStrings T::*member,
                             const std::string& example) {
  o.check([name, member, example](T& out, const Config& c) {
    out.*member = string_map_of(c, name, example);
  });
  return o.key(name, Type::Any);
}

/// T's options, declared once by `static void T::declare(Options<T>&)` on first use. A struct
/// without a default constructor also provides `static T T::option_defaults()`.
template <typename T>
const Options<T>& options_of() {
  static const Options<T> options = [] {
    Options<T> o = [] {
      if constexpr (std::is_default_constructible_v<T>) {
        return Options<T>();
      } else {
        return Options<T>(T::option_defaults());
      }
    }();
    T::declare(o);
    return o;
  }();
  return options;
}

}  // namespace unitrain
