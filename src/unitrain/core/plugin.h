#pragma once
// Plugins: shared libraries whose static initializers register more components.
#include <string>

namespace unitrain {

/// Loads `path` (dlopen, RTLD_NOW | RTLD_GLOBAL). Its static initializers run now and may call
/// e.g. `unitrain::model_registry().add(...)`. ConfigError naming the file and the loader's
/// reason when it cannot be loaded.
void load_plugin(const std::string& path);

}  // namespace unitrain
