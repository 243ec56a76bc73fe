#pragma once
// Resolving a component section ({type, args, other keys}) on its own, outside the root schema.
#include <memory>
#include <string>

#include "unitrain/core/schema.h"

namespace unitrain {

/// Resolves `section` as a parent schema's `add(name, Type::Section).component(kind,
/// default_type).section(extra)` field would: `type` names a registered `kind` (default
/// `default_type`), `args` is checked by that component's schema and the other keys by `extra`.
/// Key paths in errors are those of `section` (e.g. `optimizer.lr`). Resolving an already
/// resolved section gives the same section.
Config resolve_component_section(const Config& section, const std::string& kind,
                                 const std::string& default_type,
                                 std::shared_ptr<const Schema> extra);

}  // namespace unitrain
