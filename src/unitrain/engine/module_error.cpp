#include "unitrain/engine/module_error.h"

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {

namespace {

/// A failed collective's message, as ProcessGroup writes it (parallel/process_group.cpp):
/// "rank 1: reduce_scatter #18 (step 3, backward) across 3 processes failed after 0.1 s ...".
bool is_collective_failure(const std::string& text) {
  return text.rfind("rank ", 0) == 0 && text.find(" processes failed after ") != std::string::npos;
}

}  // namespace

void rethrow_module_error(const std::string& where, const std::string& hint) {
  const std::string prefix = where + (hint.empty() ? "" : " " + hint) + " failed: ";
  try {
    throw;
  } catch (const ConfigError& e) {
    throw ConfigError(prefix + e.what());
  } catch (const std::exception& e) {
    const std::string text = error_text(e, 1000);
    if (is_collective_failure(text)) throw TrainError("lost a process in " + where + ": " + text);
    throw TrainError(prefix + text);
  } catch (...) {
    throw TrainError(prefix + "an exception that is not a std::exception");
  }
}

}  // namespace unitrain
