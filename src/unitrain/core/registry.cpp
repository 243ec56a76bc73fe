#include "unitrain/core/registry.h"

#include <algorithm>
#include <mutex>

namespace unitrain {
namespace catalog {
namespace {

struct Store {
  std::mutex mu;
  std::map<std::string, std::map<std::string, ComponentInfo>> by_kind;
};

Store& store() {
  static Store s;
  return s;
}

}  // namespace

void add(ComponentInfo info) {
  std::lock_guard<std::mutex> lock(store().mu);
  auto& names = store().by_kind[info.kind];
  UT_CHECK(names.count(info.name) == 0, info.kind, " '", info.name,
           "' is registered twice (a plugin may reuse a built-in name; pick another)");
  std::string name = info.name;
  names.emplace(name, std::move(info));
}

const ComponentInfo& find(const std::string& kind, const std::string& name,
                          const std::string& key_path) {
  std::lock_guard<std::mutex> lock(store().mu);
  auto& names = store().by_kind[kind];
  auto it = names.find(name);
  if (it != names.end()) return it->second;
  std::vector<std::string> known;
  for (const auto& kv : names) known.push_back(kv.first);
  std::string hint = closest_match(name, known);
  std::string list;
  for (size_t i = 0; i < known.size(); ++i) list += (i ? ", " : "") + known[i];
  throw ConfigError(detail::concat("unknown ", kind, " '", name, "' at ", key_path,
                                   hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                                   "; known: ", list.empty() ? "(none registered)" : list));
}

std::vector<std::string> kinds() {
  std::lock_guard<std::mutex> lock(store().mu);
  std::vector<std::string> out;
  for (const auto& kv : store().by_kind) {
    if (!kv.second.empty()) out.push_back(kv.first);
  }
  return out;
}

std::vector<const ComponentInfo*> of_kind(const std::string& kind) {
  std::lock_guard<std::mutex> lock(store().mu);
  std::vector<const ComponentInfo*> out;
  for (const auto& kv : store().by_kind[kind]) out.push_back(&kv.second);
  return out;
}

}  // namespace catalog
}  // namespace unitrain
