#include "unitrain/engine/callback_registry.h"

namespace unitrain {

Registry<CallbackPtr>& callback_registry() {
  static Registry<CallbackPtr> registry("callback");
  return registry;
}

}  // namespace unitrain
