#pragma once
// NamedTensors: the common currency of the checkpoint files (state dicts, safetensors).
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace unitrain {

/// Named tensors in a fixed order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

}  // namespace unitrain
