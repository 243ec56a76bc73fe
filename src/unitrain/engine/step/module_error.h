#pragma once
// What the module's own code got wrong, named: errors from it (training_step, validation_step,
// test_step, and the backward of the loss it returned) with where the run stood, and tensors
// it trains without registering them.
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace unitrain {

/// Inside a catch block around a call into the module: rethrows the exception as one that
/// names `where` ("the module's training_step at step 12 failed: ..."), and `hint` after it
/// when given, without LibTorch's C++ backtrace. A ConfigError stays a ConfigError; anything
/// else becomes a TrainError. A CollectiveError (parallel/collective_error.h: ZeRO 3's
/// collectives run in forward and backward) is not the module's failure: it stays one, "lost a
/// process in <where>: rank 1: reduce_scatter #18 ... did not arrive: rank 2: ...", no hint.
[[noreturn]] void rethrow_module_error(const std::string& where, const std::string& hint = "");

/// The leaves of `loss`'s autograd graph (tensors that require grad and were made by no
/// operation) that are none of `known` and not empty, in the order the graph reaches them; nothing
/// when `loss` has no graph. The first training step looks for them: most often a layer the module
/// forgot to register_module, which gets gradients but no updates and is never saved.
std::vector<at::Tensor> leaves_outside(const at::Tensor& loss,
                                       const std::vector<at::Tensor>& known);
/// The warning for such `stray` leaves ("" when there are none): how many, their shapes, what
/// it means and what to do.
std::string stray_leaves_warning(const std::vector<at::Tensor>& stray);

}  // namespace unitrain
