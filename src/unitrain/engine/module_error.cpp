#include "unitrain/engine/module_error.h"

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {

void rethrow_module_error(const std::string& where) {
  const std::string prefix = where + " failed: ";
  try {
    throw;
  } catch (const ConfigError& e) {
    throw ConfigError(prefix + e.what());
  } catch (const std::exception& e) {
    throw TrainError(prefix + error_text(e, 1000));
  } catch (...) {
    throw TrainError(prefix + "an exception that is not a std::exception");
  }
}

}  // namespace unitrain
