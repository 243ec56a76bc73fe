#include <mutex>

#include "unitrain/core/builtins.h"
#include "unitrain/core/registry.h"

namespace unitrain {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_builtin_datasets();
    register_builtin_models();
    register_builtin_losses();
    register_builtin_regularizers();
    register_builtin_metrics();
    register_builtin_optimizers();
    register_builtin_schedulers();
  });
}

}  // namespace unitrain
