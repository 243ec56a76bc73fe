#pragma once
// The text of `unitrain list`: registered components by kind, with their arguments.
#include <string>

namespace unitrain {

/// Every kind with each registered component's one-line help (`unitrain list`).
std::string component_list();

/// One kind — `kind` is its name, singular or plural ("model", "models") — with each
/// component's help and arguments: name, type, default and one-line help (`unitrain list model`).
/// ConfigError listing the known kinds (with a "did you mean") for an unknown kind.
std::string component_list(const std::string& kind);

}  // namespace unitrain
