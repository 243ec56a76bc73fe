#pragma once
// UnitRunner: how a module's units (a transformer's embeddings, each block, its head) run in
// forward — straight through, or around ZeRO stage 3's gather of their sharded parameters.
#include <torch/types.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace unitrain {

using TensorsFn = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

/// A module with units (TrainModule::units()) runs each one as `runner.run(unit, fn, inputs)`
/// when a runner is set, in the order units() lists them, every one in every forward.
class UnitRunner {
 public:
  virtual ~UnitRunner() = default;
  /// `fn(inputs)`: unit `unit`'s forward. `fn` may be called again in backward (it is kept
  /// until then): what it captures must live that long.
  virtual std::vector<torch::Tensor> run(size_t unit, const TensorsFn& fn,
                                         const std::vector<torch::Tensor>& inputs) = 0;
};

}  // namespace unitrain
