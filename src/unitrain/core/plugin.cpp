#include "unitrain/core/plugin.h"

#include <dlfcn.h>

#include <filesystem>

#include "unitrain/core/error.h"

namespace unitrain {

void load_plugin(const std::string& path) {
  UT_CHECK(std::filesystem::exists(path), "plugin '", path, "' does not exist");
  // A path without a slash would make dlopen search the library path instead of this file.
  std::string target = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(target.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw ConfigError("cannot load plugin '" + path + "': " + (why ? why : "unknown error"));
  }
}

}  // namespace unitrain
