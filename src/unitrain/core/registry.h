#pragma once
// Registry: name -> factory, with a one-line description and an argument schema per name.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "unitrain/core/config.h"
#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/core/schema.h"

namespace unitrain {

/// What the catalog knows of one registered component, whatever its C++ type.
struct ComponentInfo {
  std::string kind;  ///< "model", "dataset", "loss", ...
  std::string name;
  std::string help;  ///< one line, shown by `unitrain list`
  std::shared_ptr<const Schema> args;
};

/// Every registered component by kind, for config validation, `unitrain list` and the docs.
namespace catalog {
void add(ComponentInfo info);  ///< ConfigError when kind/name is already registered
/// ConfigError naming `key_path`, the bad name and every registered name of `kind`.
const ComponentInfo& find(const std::string& kind, const std::string& name,
                          const std::string& key_path);
std::vector<std::string> kinds();
std::vector<const ComponentInfo*> of_kind(const std::string& kind);  ///< sorted by name
}  // namespace catalog

/// The registered name a resolved component section ({type, args, ...}) names: its `type`; ""
/// for a null section (none given).
inline std::string component_type(const Config& section) {
  return section.has("type") ? section.get_string("type") : "";
}

/// Name -> factory for one kind of component. Registering a name twice is an error; an unknown
/// name lists every registered candidate. Factories receive the component's resolved `args`
/// plus any extra arguments the kind needs (e.g. the parameters an optimizer updates).
template <typename Product, typename... Extra>
class Registry {
 public:
  using Factory = std::function<Product(const Config& args, Extra...)>;

  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  void add(const std::string& name, const std::string& help, Schema args, Factory factory) {
    catalog::add({kind_, name, help, std::make_shared<Schema>(std::move(args))});
    factories_[name] = std::move(factory);
  }

  /// Registers `name` whose args are the fields of `Args`, each declared once in `args`
  /// (key, default, range, help): the catalog shows its schema, and `make` gets the args
  /// parsed into an Args. `make` takes `(const Args&, Extra...)`, or `(const Args&, const
  /// Config& at, Extra...)` when its own errors name keys (`at.key_path("total")`).
  template <typename Args, typename Make>
  void add(const std::string& name, const std::string& help, Options<Args> args, Make make) {
    Schema schema = *args.schema();
    add(name, help, std::move(schema),
        [args = std::move(args), make = std::move(make)](const Config& c, Extra... extra) {
          if constexpr (std::is_invocable_v<const Make&, const Args&, const Config&, Extra...>) {
            return Product(make(args.parse(c), c, std::forward<Extra>(extra)...));
          } else {
            return Product(make(args.parse(c), std::forward<Extra>(extra)...));
          }
        });
  }
  /// The same with Args's own declaration, `static void Args::declare(Options<Args>&)`.
  template <typename Args, typename Make>
  void add(const std::string& name, const std::string& help, Make make) {
    add(name, help, options_of<Args>(), std::move(make));
  }

  /// Builds from a resolved component section `{type: ..., args: {...}}`.
  Product create(const Config& section, Extra... extra) const {
    const std::string name = section.get_string("type");
    const std::string type_key = section.key_path("type");    // (a named string: no temporary
    const auto& info = catalog::find(kind_, name, type_key);  // that the reference could outlive)
    auto it = factories_.find(name);
    UT_CHECK(it != factories_.end(), "component ", kind_, " '", name,
             "' is described but has no factory");
    Config args =
        section.has("args")
            ? section.at("args")
            : info.args->resolve(Config(YAML::Node(YAML::NodeType::Map), section.key_path("args")));
    return it->second(args, std::forward<Extra>(extra)...);
  }

  /// Builds `name` from its already resolved `args` (for kinds whose settings are not given
  /// as a `{type, args}` section); ConfigError naming `key_path` for an unknown name.
  Product create_named(const std::string& name, const Config& args, const std::string& key_path,
                       Extra... extra) const {
    catalog::find(kind_, name, key_path);
    auto it = factories_.find(name);
    UT_CHECK(it != factories_.end(), "component ", kind_, " '", name,
             "' is described but has no factory");
    return it->second(args, std::forward<Extra>(extra)...);
  }

  bool contains(const std::string& name) const { return factories_.count(name) > 0; }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Factory> factories_;
};

}  // namespace unitrain
