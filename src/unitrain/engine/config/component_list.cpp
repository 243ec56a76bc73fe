#include "unitrain/engine/config/component_list.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"
#include "unitrain/core/schema.h"
#include "unitrain/engine/builtins.h"

namespace unitrain {
namespace {

std::string pad(const std::string& s, size_t width) {
  return s + std::string(s.size() < width ? width - s.size() : 1, ' ');
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string join_kinds(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// "1.0e-3", "null" or "required": what an argument is when the config leaves it out.
std::string default_text(const Field& f) {
  if (f.default_yaml()) return *f.default_yaml();
  if (f.is_nullable()) return "null";
  return f.type() == Type::Section || f.type() == Type::SectionList ? "" : "required";
}

std::string arguments_text(const Schema& args) {
  if (args.fields().empty()) return "      (no arguments)\n";
  size_t name_w = 0, type_w = 0, def_w = 0;
  for (const auto& f : args.fields()) {
    name_w = std::max(name_w, f.name().size());
    type_w = std::max(type_w, f.type_text().size());
    def_w = std::max(def_w, default_text(f).size());
  }
  std::string out;
  for (const auto& f : args.fields()) {
    out += "      " + pad(f.name(), name_w + 2) + pad(f.type_text(), type_w + 2) +
           pad(default_text(f), def_w + 2) + f.help_text() + "\n";
  }
  return out;
}

std::string kind_text(const std::string& kind, bool with_args) {
  std::string out = kind + ":\n";
  for (const auto* info : catalog::of_kind(kind)) {
    out += "  " + pad(info->name, 18) + info->help + "\n";
    if (with_args) out += arguments_text(*info->args);
  }
  return out;
}

}  // namespace

std::string component_list() {
  register_builtins();
  std::string out;
  for (const auto& kind : catalog::kinds()) out += kind_text(kind, false);
  return out;
}

std::string component_list(const std::string& kind) {
  register_builtins();
  const std::vector<std::string> kinds = catalog::kinds();
  const std::string want = lower(kind);
  for (const auto& k : kinds) {
    if (want == k || want == k + "s" || want == k + "es") return kind_text(k, true);
  }
  std::string hint = closest_match(want, kinds);
  for (size_t cut = 1; hint.empty() && cut <= 2 && want.size() > cut; ++cut) {
    hint = closest_match(want.substr(0, want.size() - cut), kinds);  // a misspelt plural
  }
  throw ConfigError(detail::concat("list: unknown kind '", kind, "'",
                                   hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                                   "; known kinds: ", join_kinds(kinds)));
}

}  // namespace unitrain
