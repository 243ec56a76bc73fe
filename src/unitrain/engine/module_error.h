#pragma once
// Errors from the module's own code (training_step, validation_step, test_step, and the backward
// of the loss it returned), named with where the run stood.
#include <string>

namespace unitrain {

/// Inside a catch block around a call into the module: rethrows the exception as one that
/// names `where` ("the module's training_step at step 12: ..."), without LibTorch's C++
/// backtrace. A ConfigError stays a ConfigError; anything else becomes a TrainError.
[[noreturn]] void rethrow_module_error(const std::string& where);

}  // namespace unitrain
