#pragma once
// Errors from the module's own code (training_step, validation_step, test_step, and the backward
// of the loss it returned), named with where the run stood.
#include <string>

namespace unitrain {

/// Inside a catch block around a call into the module: rethrows the exception as one that
/// names `where` ("the module's training_step at step 12 failed: ..."), and `hint` after it
/// when given, without LibTorch's C++ backtrace. A ConfigError stays a ConfigError; anything
/// else becomes a TrainError. A collective that failed inside the module's code (ZeRO 3 gathers
/// in forward and backward) is not the module's failure: "lost a process in <where>: rank 1:
/// reduce_scatter #18 ... did not arrive: rank 2: ...", without the hint.
[[noreturn]] void rethrow_module_error(const std::string& where, const std::string& hint = "");

}  // namespace unitrain
