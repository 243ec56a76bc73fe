#pragma once
// LibTorch 1.x and 2.x key torch::optim::Optimizer::state() differently: 1.x by the text of the
// parameter's TensorImpl address, 2.x by the address itself. Code that looks a parameter's state
// up goes through these, whichever LibTorch it is built against.
#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace unitrain {

/// The map Optimizer::state() returns.
using OptimizerStateMap =
    std::remove_reference_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;

/// The key of `param`'s entry in Optimizer::state(). (A template so that only the branch for
/// this LibTorch's key type is compiled.)
template <typename Key = OptimizerStateMap::key_type>
Key optimizer_state_key(const torch::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;  // as 1.x's c10::guts::to_string writes the address
    text << param.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

}  // namespace unitrain
