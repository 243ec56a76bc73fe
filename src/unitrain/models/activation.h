#pragma once
// Activation: the element-wise nonlinearities a built-in model can be configured with.
#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace unitrain::models {

/// An element-wise nonlinearity chosen by name in a config (`relu`, `gelu`, `tanh`, `sigmoid`,
/// `silu`). GELU is the exact (erf) form, as torch.nn.GELU() by default.
enum class Activation { ReLU, GELU, Tanh, Sigmoid, SiLU };

/// The config names, in the order of the enum.
const std::vector<std::string>& activation_names();
/// The config names with their values, for binding an Activation field (Options::field).
std::vector<std::pair<std::string, Activation>> activation_table();
/// Parses a config name; ConfigError naming `key`, the bad value and the accepted names.
Activation activation_from_name(const std::string& name, const std::string& key = "activation");
const char* activation_name(Activation a);
torch::Tensor apply_activation(Activation a, const torch::Tensor& x);
/// TorchScript source applying `a` to the expression `x`, e.g. "torch.relu(x)".
std::string activation_torchscript(Activation a, const std::string& x);

}  // namespace unitrain::models
