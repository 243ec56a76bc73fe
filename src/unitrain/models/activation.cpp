#include "unitrain/models/activation.h"

#include <torch/torch.h>

#include "unitrain/core/error.h"

namespace unitrain::models {

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"relu", "gelu", "tanh", "sigmoid", "silu"};
  return names;
}

std::vector<std::pair<std::string, Activation>> activation_table() {
  std::vector<std::pair<std::string, Activation>> table;
  for (size_t i = 0; i < activation_names().size(); ++i) {
    table.emplace_back(activation_names()[i], static_cast<Activation>(i));
  }
  return table;
}

Activation activation_from_name(const std::string& name, const std::string& key) {
  const auto& names = activation_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Activation>(i);
  }
  throw ConfigError(
      detail::concat(key, " must be one of relu, gelu, tanh, sigmoid, silu; got '", name, "'"));
}

const char* activation_name(Activation a) {
  return activation_names().at(static_cast<size_t>(a)).c_str();
}

torch::Tensor apply_activation(Activation a, const torch::Tensor& x) {
  switch (a) {
    case Activation::ReLU:
      return torch::relu(x);
    case Activation::GELU:
      return torch::gelu(x);
    case Activation::Tanh:
      return torch::tanh(x);
    case Activation::Sigmoid:
      return torch::sigmoid(x);
    case Activation::SiLU:
      return torch::silu(x);
  }
  return x;
}

std::string activation_torchscript(Activation a, const std::string& x) {
  switch (a) {
    case Activation::ReLU:
      return "torch.relu(" + x + ")";
    case Activation::GELU:
      return "torch.gelu(" + x + ")";
    case Activation::Tanh:
      return "torch.tanh(" + x + ")";
    case Activation::Sigmoid:
      return "torch.sigmoid(" + x + ")";
    case Activation::SiLU:
      return "torch.silu(" + x + ")";
  }
  throw ConfigError("torchscript export: unknown activation");
}

}  // namespace unitrain::models
