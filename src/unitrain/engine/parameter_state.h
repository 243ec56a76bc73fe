#pragma once
// ParameterState: state a callback keeps per parameter of the module (the ema callback's
// average of the weights). Under distributed.zero: 3 a parameter is whole only while its unit
// runs; the engine then has such state kept per part (this rank's 1/W of each unit), saves and
// restores those parts as it does the model's (<state_name>-shard-rank-<R>.pt, re-cut at another
// world size), and makes the state whole again after fit. A callback declares it through
// Callback::parameter_state(); the engine serves every such state alike.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace unitrain {

class ParameterState {
 public:
  virtual ~ParameterState() = default;
  /// Names its files and says what it is in messages: "ema". By parts, each rank's
  /// <name>-shard-rank-<R>.pt; whole, the callback's own checkpoint entry <name>.pt
  /// (on_save_checkpoint's: a dict of tensors by parameter name, as a run without parts saves
  /// it), from which a resume by parts cuts them, and which eval, export and `checkpoint merge`
  /// make from the parts.
  virtual std::string state_name() const = 0;
  /// Before fit starts: keep the state per part instead of per parameter; `parts` are this
  /// rank's parameter shards, then the parameters no unit holds, whole.
  virtual void keep_parts(std::vector<at::Tensor> parts) = 0;
  /// The state, a tensor per parameter (after keep_parts(): per part, in the order of `parts`).
  virtual const std::vector<at::Tensor>& values() const = 0;
  /// After keep_parts(), a resume whose checkpoint holds none of this state: it starts again
  /// from the parts' values.
  virtual void restart_from_parts() = 0;
  /// After fit (the module's parameters whole again): the state whole too; `whole` holds it by
  /// parameter name.
  virtual void make_whole(const torch::nn::Module& weights,
                          const std::map<std::string, at::Tensor>& whole) = 0;
};

}  // namespace unitrain
